import PushEnvelope
import PushHTTP
import PushProviders
import PushTransports

/// Forwards an Android push to FCM HTTP v1 for the relay's project, with the service account's
/// cached OAuth token: a data-only message (`hapi_v`, `hapi_e`), no notification, no collapse
/// key, restricted to the official app's package.
struct RelayFCMForwarder: Sendable {
    let endpoint: String
    let projectId: String
    let packageName: String
    let accessTokens: FCMAccessTokenProvider
    let client: HTTPClient

    func forward(_ push: RelayPush, deadline: ContinuousClock.Instant) async -> RelayProviderOutcome {
        let accessToken: String
        do {
            accessToken = try await accessTokens.token()
        } catch {
            return RelayProviderOutcome(.upstream, providerStatus: error.status, reason: PushDeliveryReason.oauth.rawValue)
        }
        let remaining = deadline - ContinuousClock.now
        guard remaining > .milliseconds(1) else { return RelayProviderOutcome(.upstream, reason: PushDeliveryReason.timeout.rawValue) }
        let request = HTTPRequest(
            FCMProvider.request(
                token: push.token, data: .envelope(push.envelope), highPriority: push.priority != 5, restrictedPackage: packageName,
                projectId: projectId, accessToken: accessToken), endpoint: endpoint, timeout: remaining)
        do {
            let response = try await client.send(request)
            // Google no longer takes this token: the next push exchanges a new one.
            if response.status == 401 { await accessTokens.invalidate(accessToken) }
            let answer = FCMProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
            return RelayProviderOutcome.from(answer, rateLimitedReasonFallsBack: true)
        } catch {
            return RelayProviderOutcome.network(error)
        }
    }
}
