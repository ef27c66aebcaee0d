import PushHTTP
import PushProviders
import PushTransports

/// Forwards an iOS push to APNs through `APNsClient`, the hub's client too (the ES256 provider
/// token minted once, re-signed after 45 minutes, and once more when Apple asks for a fresh one,
/// when this push is sent once more with the new token: the client's rule, not restated here),
/// one try within the push's deadline. What stays here is the relay's policy on the report.
struct RelayAPNsForwarder: Sendable {
    let apns: APNsClient
    let client: HTTPClient

    func forward(_ push: RelayPush, deadline: ContinuousClock.Instant) async -> RelayProviderOutcome {
        // The collapse id only when the hub sent one; `APNsProvider.request` cuts it.
        let report = await apns.send(
            APNsClient.Push(token: push.token, envelope: push.envelope, priority: push.priority, collapseId: push.collapseId),
            over: RelayExchange(client: client, deadline: deadline))
        return RelayProviderOutcome.apns(report)
    }
}
