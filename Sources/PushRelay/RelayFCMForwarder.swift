import PushHTTP
import PushProviders
import PushTransports

/// Forwards an Android push to FCM HTTP v1 through `FCMClient`, the hub's client too (the
/// service account's cached OAuth token, dropped after a 401 so the next push exchanges a new
/// one): a data-only message (`hapi_v`, `hapi_e`), no notification, no collapse key, restricted
/// to the official app's package, one try within the push's deadline. What stays here is the
/// relay's policy on the report.
struct RelayFCMForwarder: Sendable {
    let fcm: FCMClient
    let packageName: String
    let client: HTTPClient

    func forward(_ push: RelayPush, deadline: ContinuousClock.Instant) async -> RelayProviderOutcome {
        let message = FCMClient.Message(
            token: push.token, data: .envelope(push.envelope), highPriority: push.priority != 5, restrictedPackage: packageName)
        return RelayProviderOutcome.fcm(await fcm.send(message, over: RelayExchange(client: client, deadline: deadline)))
    }
}
