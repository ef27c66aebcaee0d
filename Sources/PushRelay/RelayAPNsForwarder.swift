import PushEnvelope
import PushHTTP
import PushProviders
import PushSync
import PushTransports

/// Forwards an iOS push to APNs: `POST /3/device/<token>` over the shared multiplexed HTTP/2
/// client with the ES256 provider token (minted once, re-signed after 45 minutes, and once
/// more on `403 ExpiredProviderToken`, when this push is retried once with the new token).
struct RelayAPNsForwarder: Sendable {
    let endpoint: String
    let topic: String
    let providerToken: APNsProviderToken
    let client: HTTPClient
    /// The provider token as `providerToken` last gave it, and when: reused without asking the
    /// actor (an await) for `recentTokenAge`, so at most that much past its 45 minutes.
    private let recentToken = Locked<(jwt: String, at: ContinuousClock.Instant)?>(nil)
    static let recentTokenAge: Duration = .seconds(1)

    init(endpoint: String, topic: String, providerToken: APNsProviderToken, client: HTTPClient) {
        self.endpoint = endpoint
        self.topic = topic
        self.providerToken = providerToken
        self.client = client
    }

    /// The token the actor gave within the last `recentTokenAge`, nil when there is none
    /// (then `forward` asks it).
    func recentProviderToken() -> String? {
        let now = ContinuousClock.now
        return recentToken.withLock { recent in
            guard let recent, now - recent.at < Self.recentTokenAge else { return nil }
            return recent.jwt
        }
    }

    func forward(_ push: RelayPush, deadline: ContinuousClock.Instant) async -> RelayProviderOutcome {
        let jwt: String
        do {
            jwt = try await providerToken.token()
        } catch {
            return RelayProviderOutcome(.upstream, reason: PushDeliveryReason.providerToken.rawValue)
        }
        let fetched = ContinuousClock.now
        recentToken.withLock { $0 = (jwt, fetched) }
        let first = await attempt(push, jwt: jwt, deadline: deadline)
        guard first.freshProviderToken else { return first.outcome }
        return await retry(push, rejected: jwt, deadline: deadline)
    }

    /// `forward` with a token at hand (`recentProviderToken`), without a task: `completion`
    /// runs on the HTTP client's engine thread (on this one when the request is refused at
    /// once). Only the rare retry with a fresh provider token goes through a task.
    func forward(
        _ push: RelayPush, jwt: String, deadline: ContinuousClock.Instant, completion: @escaping @Sendable (RelayProviderOutcome) -> Void
    ) {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .milliseconds(1) else {
            completion(RelayProviderOutcome(.upstream, reason: PushDeliveryReason.timeout.rawValue))
            return
        }
        client.send(request(push, jwt: jwt, timeout: remaining)) { [self] result in
            let first = Self.outcome(result)
            guard first.freshProviderToken else {
                completion(first.outcome)
                return
            }
            Task { completion(await retry(push, rejected: jwt, deadline: deadline)) }
        }
    }

    /// After `403 ExpiredProviderToken`: one more attempt with a fresh token.
    private func retry(_ push: RelayPush, rejected jwt: String, deadline: ContinuousClock.Instant) async -> RelayProviderOutcome {
        let fresh: String
        do {
            fresh = try await providerToken.refresh(rejected: jwt)
        } catch {
            recentToken.withLock { $0 = nil }
            return RelayProviderOutcome(.upstream, providerStatus: 403, reason: PushDeliveryReason.providerToken.rawValue)
        }
        let fetched = ContinuousClock.now
        recentToken.withLock { $0 = (fresh, fetched) }
        return await attempt(push, jwt: fresh, deadline: deadline).outcome
    }

    /// One request: the relay's outcome, and whether Apple asked for a fresh provider token
    /// (a 403 `ExpiredProviderToken`, read by `APNsProvider.parse`).
    private func attempt(_ push: RelayPush, jwt: String, deadline: ContinuousClock.Instant) async -> (outcome: RelayProviderOutcome, freshProviderToken: Bool) {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .milliseconds(1) else { return (RelayProviderOutcome(.upstream, reason: PushDeliveryReason.timeout.rawValue), false) }
        do {
            return Self.outcome(.success(try await client.send(request(push, jwt: jwt, timeout: remaining))))
        } catch {
            return Self.outcome(.failure(error))
        }
    }

    /// The relay's outcome of one response, and whether Apple asked for a fresh provider token.
    private static func outcome(_ result: Result<HTTPResponse, HTTPClientError>) -> (outcome: RelayProviderOutcome, freshProviderToken: Bool) {
        switch result {
        case .success(let response):
            let answer = APNsProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
            return (
                RelayProviderOutcome.from(answer, rateLimitedReasonFallsBack: false),
                answer.verdict == .retryWithFreshProviderToken && answer.status == 403
            )
        case .failure(let error):
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
