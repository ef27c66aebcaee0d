import PushEnvelope
import PushHTTP
import PushProviders
import PushTransports

/// Forwards an iOS push to APNs: `POST /3/device/<token>` over the shared multiplexed HTTP/2
/// client with the ES256 provider token (minted once, re-signed after 45 minutes, and once
/// more on `403 ExpiredProviderToken`, when this push is retried once with the new token).
struct RelayAPNsForwarder: Sendable {
    let endpoint: String
    let topic: String
    let providerToken: APNsProviderToken
    let client: HTTPClient

    func forward(_ push: RelayPush, deadline: ContinuousClock.Instant) async -> RelayProviderOutcome {
        let jwt: String
        do {
            jwt = try await providerToken.token()
        } catch {
            return RelayProviderOutcome(.upstream, reason: PushDeliveryReason.providerToken.rawValue)
        }
        let first = await attempt(push, jwt: jwt, deadline: deadline)
        guard first.freshProviderToken else { return first.outcome }
        let fresh: String
        do {
            fresh = try await providerToken.refresh(rejected: jwt)
        } catch {
            return RelayProviderOutcome(.upstream, providerStatus: 403, reason: PushDeliveryReason.providerToken.rawValue)
        }
        return await attempt(push, jwt: fresh, deadline: deadline).outcome
    }

    /// One request: the relay's outcome, and whether Apple asked for a fresh provider token
    /// (a 403 `ExpiredProviderToken`, read by `APNsProvider.parse`).
    private func attempt(_ push: RelayPush, jwt: String, deadline: ContinuousClock.Instant) async -> (outcome: RelayProviderOutcome, freshProviderToken: Bool) {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .milliseconds(1) else { return (RelayProviderOutcome(.upstream, reason: PushDeliveryReason.timeout.rawValue), false) }
        do {
            let response = try await client.send(request(push, jwt: jwt, timeout: remaining))
            let answer = APNsProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
            return (
                RelayProviderOutcome.from(answer, rateLimitedReasonFallsBack: false),
                answer.verdict == .retryWithFreshProviderToken && answer.status == 403
            )
        } catch {
            return (RelayProviderOutcome.network(error), false)
        }
    }

    /// The spec's request (`APNsProvider.request`): alert push type, expiration 0, the collapse
    /// id only when the hub sent one, the push's priority.
    func request(_ push: RelayPush, jwt: String, timeout: Duration) -> HTTPRequest {
        HTTPRequest(
            APNsProvider.request(token: push.token, envelope: push.envelope, topic: topic, jwt: jwt, priority: push.priority, collapseId: push.collapseId),
            endpoint: endpoint, timeout: timeout)
    }
}
