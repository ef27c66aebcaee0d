import PushHTTP
package import PushProviders

/// Direct APNs as both the hub (`APNsTransport`) and the relay (`RelayAPNsForwarder`) send it:
/// the device-token rule, the request (`APNsProvider.request`, which cuts the collapse id), the
/// provider token, and what Apple's answer obliges us to do before anyone's policy reads it:
/// after `403 ExpiredProviderToken`, mint a fresh token once (single flight across every push
/// that hears it, `APNsProviderToken.refresh(rejected:)`) and send this push once more. How a
/// request travels (retries, backoff, a deadline) is the caller's `ProviderExchange`; what the
/// report means (prune, keep, retry; the relay's status and code) is the caller's policy.
package struct APNsClient: Sendable {
    /// Scheme and authority, no trailing slash.
    package var endpoint: String { parsedEndpoint.text }
    /// The endpoint parsed once: each push's request carries its origin.
    let parsedEndpoint: HTTPEndpoint
    /// `apns-topic`: the app's bundle id.
    package let topic: String
    package let providerToken: APNsProviderToken

    package init(endpoint: String, topic: String, providerToken: APNsProviderToken) {
        self.parsedEndpoint = HTTPEndpoint(endpoint)
        self.topic = topic
        self.providerToken = providerToken
    }

    /// One push: the device token (hex), the sealed envelope, `apns-priority` (10 or 5), and
    /// the collapse id when there is one.
    package struct Push: Sendable {
        package var token: String
        package var envelope: String
        package var priority: Int
        package var collapseId: String?

        package init(token: String, envelope: String, priority: Int, collapseId: String?) {
            self.token = token
            self.envelope = envelope
            self.priority = priority
            self.collapseId = collapseId
        }
    }

    /// What happened to one push.
    package struct Report: Sendable {
        /// The last answer read (after a fresh token, the resend's), its reason and detail
        /// scrubbed of the device token and the JWTs; or ours when nothing was sent
        /// (`bad_device_token_format`, `provider_token`, the exchange's own reason).
        package var answer: ProviderAnswer
        /// HTTP attempts in all, the resend and the exchange's retries included; 0 when nothing
        /// was sent.
        package var attempts: Int
        /// The exchanges' latencies added (minting is not counted).
        package var latency: Duration
        /// Whether Apple asked for a fresh provider token (then the push went once more with it,
        /// unless `tokenFailure` says it could not be had).
        package var askedForFreshToken: Bool
        /// Why no provider token could be had: before anything was sent (`attempts` 0), or, with
        /// `askedForFreshToken`, when a fresh one was asked for (`answer` is Apple's refusal).
        package var tokenFailure: PushCredentialError?
    }

    /// The token the next push would carry (a batch asks once, so a key that cannot sign fails
    /// the batch once).
    package func token() async throws(PushCredentialError) -> String { try await providerToken.token() }

    /// Sends `push` over `exchange` with `jwt` (the manager's current token when nil).
    package func send(_ push: Push, jwt: String? = nil, over exchange: some ProviderExchange) async -> Report {
        // The one token rule: anything else would change the request path.
        guard APNsDeviceToken.isWellFormed(push.token) else { return .malformedToken }
        let first: String
        if let jwt {
            first = jwt
        } else {
            do {
                first = try await providerToken.token()
            } catch {
                var report = Report(declined: .providerToken, detail: error.message)
                report.tokenFailure = error
                return report
            }
        }
        let report = self.report(push, jwt: first, sent: await exchange.exchange(request(push, jwt: first), parse: Self.parse))
        guard report.askedForFreshToken else { return report }
        return await resend(push, after: report, rejected: first, over: exchange)
    }

    /// The first request of `push` with `jwt`, for a caller that starts requests itself (the
    /// hub's chunked send); nil when the token breaks the token rule (`Report.malformedToken`).
    func firstRequest(_ push: Push, jwt: String) -> HTTPRequest? {
        APNsDeviceToken.isWellFormed(push.token) ? request(push, jwt: jwt) : nil
    }

    /// What a first exchange of `push` with `jwt` came to. `askedForFreshToken`: Apple's word
    /// (403 `ExpiredProviderToken`, read by `APNsProvider.parse`) that this push was not
    /// processed and our token is too old; then `resend` must follow.
    package func report(_ push: Push, jwt: String, sent: ProviderExchangeResult) -> Report {
        var report = Report(answer: sent.answer.scrubbed(secrets: [push.token, jwt]), attempts: sent.attempts, latency: sent.latency)
        report.askedForFreshToken = sent.answer.said == .providerTokenExpired
        return report
    }

    /// After Apple asked for a fresh provider token: mints one (single flight, replacing
    /// `rejected`) and sends `push` once more with it.
    package func resend(_ push: Push, after first: Report, rejected: String, over exchange: some ProviderExchange) async -> Report {
        var report = first
        let fresh: String
        do {
            fresh = try await providerToken.refresh(rejected: rejected)
        } catch {
            report.tokenFailure = error
            return report
        }
        let again = await exchange.exchange(request(push, jwt: fresh), parse: Self.parse)
        report.answer = again.answer.scrubbed(secrets: [push.token, rejected, fresh])
        report.attempts += again.attempts
        report.latency += again.latency
        return report
    }

    /// The spec's request: alert push type, expiration 0, the push's priority, the collapse id
    /// (cut by `APNsCollapseId`) only when there is one.
    func request(_ push: Push, jwt: String) -> HTTPRequest {
        HTTPRequest(
            APNsProvider.request(
                token: push.token, envelope: push.envelope, topic: topic, jwt: jwt, priority: push.priority, collapseId: push.collapseId),
            endpoint: parsedEndpoint)
    }

    @Sendable static func parse(_ response: HTTPResponse) -> ProviderAnswer {
        APNsProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
    }
}

extension APNsClient.Report {
    init(answer: ProviderAnswer, attempts: Int, latency: Duration) {
        self.answer = answer
        self.attempts = attempts
        self.latency = latency
        self.askedForFreshToken = false
        self.tokenFailure = nil
    }

    /// The report of a push whose token breaks the token rule: nothing sent.
    package static var malformedToken: APNsClient.Report { APNsClient.Report(declined: .badDeviceTokenFormat) }

    /// Nothing was sent, for `reason` (ours).
    init(declined reason: PushDeliveryReason, detail: String? = nil) {
        self.init(answer: ProviderAnswer(.refused, status: nil, reason: reason, detail: detail), attempts: 0, latency: .zero)
    }
}
