import PushEnvelope
import PushHTTP
import PushProviders
import PushTransports

/// What a provider's answer means to the hub that asked the relay. Deliberately not the hub's
/// own policy (`PushResult`): the relay answers as the official relay does,
/// e.g. APNs `410 ExpiredToken` is `upstream` here, and FCM's `UNREGISTERED` is `unregistered`
/// whatever its status.
struct RelayProviderOutcome: Sendable, Equatable {
    enum Verdict: Sendable, Equatable {
        /// 200 `{"ok":true}`.
        case accepted
        /// 410 `unregistered`: the hub should drop the token.
        case unregistered
        /// 429 `rate_limited`: the provider throttled; retry later.
        case rateLimited
        /// 502 `upstream`: provider, auth or network failure.
        case upstream
    }

    var verdict: Verdict
    /// The provider's HTTP status, nil when none arrived.
    var providerStatus: Int?
    /// Apple's `reason`, FCM's error code, or ours (`timeout`, `oauth`…); sanitized for logs.
    var reason: String?

    init(_ verdict: Verdict, providerStatus: Int? = nil, reason: String? = nil) {
        self.verdict = verdict
        self.providerStatus = providerStatus
        self.reason = reason.map(Self.sanitized)
    }

    var answer: RelayHTTPAnswer {
        switch verdict {
        case .accepted: .accepted
        case .unregistered: .unregistered
        case .rateLimited: .rateLimited
        case .upstream: .upstream
        }
    }

    /// The relay's policy on a provider's answer (`APNsProvider.parse`, `FCMProvider.parse`):
    /// accepted → accepted; the token called unregistered or malformed → unregistered (APNs 410
    /// `ExpiredToken` and an FCM message that only describes the token as invalid are upstream,
    /// as the official relay says); every 429 → rate limited; everything else → upstream.
    /// `rateLimitedReasonFallsBack`: whether a 429 without a provider code logs `http_429` (FCM)
    /// or no reason (APNs), as each has always logged.
    static func from(_ answer: ProviderAnswer, rateLimitedReasonFallsBack: Bool) -> RelayProviderOutcome {
        guard let status = answer.status else { return RelayProviderOutcome(.upstream, reason: answer.reason?.rawValue) }
        if answer.said == .accepted { return RelayProviderOutcome(.accepted, providerStatus: status) }
        if let evidence = answer.evidence, evidence.kind == .unregistered || evidence.kind == .malformed {
            return RelayProviderOutcome(.unregistered, providerStatus: status, reason: evidence.reason.rawValue)
        }
        let reason = answer.code ?? PushDeliveryReason.http(status).rawValue
        if status == 429 {
            return RelayProviderOutcome(.rateLimited, providerStatus: status, reason: rateLimitedReasonFallsBack ? reason : answer.code)
        }
        return RelayProviderOutcome(.upstream, providerStatus: status, reason: reason)
    }

    /// The relay's reading of `APNsClient`'s report: a provider token that could not be had
    /// (before sending, or when Apple asked for a fresh one after its 403) is `upstream` with
    /// `provider_token`; everything else as `from` reads the last answer.
    static func apns(_ report: APNsClient.Report) -> RelayProviderOutcome {
        if report.tokenFailure != nil {
            return RelayProviderOutcome(.upstream, providerStatus: report.answer.status, reason: PushDeliveryReason.providerToken.rawValue)
        }
        return from(report.answer, rateLimitedReasonFallsBack: false)
    }

    /// The relay's reading of `FCMClient`'s report: a refused OAuth exchange is `upstream` with
    /// `oauth` and the token endpoint's status; everything else as `from` reads the answer.
    static func fcm(_ report: FCMClient.Report) -> RelayProviderOutcome {
        if let failure = report.tokenFailure {
            return RelayProviderOutcome(.upstream, providerStatus: failure.status, reason: PushDeliveryReason.oauth.rawValue)
        }
        return from(report.answer, rateLimitedReasonFallsBack: true)
    }

    static func apns(status: Int, body: [UInt8]) -> RelayProviderOutcome {
        from(APNsProvider.parse(status: status, body: body), rateLimitedReasonFallsBack: false)
    }

    static func fcm(status: Int, body: [UInt8]) -> RelayProviderOutcome {
        from(FCMProvider.parse(status: status, body: body), rateLimitedReasonFallsBack: true)
    }

    /// No answer arrived: always upstream, with the kind of failure for the log.
    static func network(_ error: HTTPClientError) -> RelayProviderOutcome { from(error.unanswered, rateLimitedReasonFallsBack: false) }

    /// Letters, digits, `_`, `-`, `.`; at most 64 of them: a provider's words never put
    /// anything else into a log line.
    static func sanitized(_ text: String) -> String {
        SafeText.sanitize(text, limit: 64, redactingTokens: true, codeOnly: true)
    }
}
