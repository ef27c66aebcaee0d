/// One provider answer, read: what the provider said, in the terms every policy shares. No
/// policy here: the hub's transports decide prune, keep or retry (`PushRetryPolicy`), the relay
/// which status and code it answers; both start from this value.
package struct ProviderAnswer: Sendable, Equatable, PushReasonCarrying {
    package enum Verdict: Sendable, Equatable {
        /// Accepted (not a handset receipt).
        case accepted
        /// The token is dead. `since`: the provider's own moment (APNs `timestamp`, ms since
        /// 1970), so a registration refreshed after it is kept.
        case tokenDead(since: Int64?)
        /// Our provider token (the APNs JWT) is too old: mint a fresh one and send once more.
        case retryWithFreshProviderToken
        /// The provider throttles us (429); see `retryAfter`.
        case throttled
        /// Anything else: a refusal, a failure, or no answer at all (`status` nil).
        case refused
    }

    /// What the answer says about the token, whatever the verdict. The hub prunes on the
    /// verdict; the relay, which answers like the official relay, on fewer words.
    package struct TokenEvidence: Sendable, Equatable {
        package enum Kind: Sendable, Equatable {
            /// "Not registered" (APNs 410, FCM at any status).
            case unregistered
            /// The token itself is malformed (APNs 400; FCM 400 with a violation on the token field).
            case malformed
            /// APNs 410: the token expired.
            case expired
            /// FCM 400 whose message (not a field violation) calls the token invalid.
            case described
        }
        package var kind: Kind
        /// The reason this evidence is reported under.
        package var reason: PushDeliveryReason
    }

    package var verdict: Verdict
    /// The HTTP status, nil when no answer arrived.
    package var status: Int?
    /// The provider's code sanitized (`BadCollapseId`, `NOT_FOUND`), `http_<status>` when it gave
    /// none, or ours for a network failure; nil when accepted.
    package var reason: PushDeliveryReason?
    /// The provider's message, sanitized (at most 200 characters).
    package var detail: String?
    /// The provider's code exactly as it came (APNs `reason`, FCM `errorCode`/`status`, the
    /// relay's `code`). Never printed as is: a caller sanitizes it with its own rules.
    package var code: String?
    /// Whether a retry policy may try again: never for a dead token or a malformed request.
    package var retryable: Bool
    /// The answer's `Retry-After`, as delay-seconds.
    package var retryAfter: Duration?
    /// APNs' `apns-id` of an accepted push.
    package var apnsId: String?
    package var evidence: TokenEvidence?

    package init(
        _ verdict: Verdict, status: Int?, reason: PushDeliveryReason? = nil, detail: String? = nil, code: String? = nil, retryable: Bool = false,
        retryAfter: Duration? = nil, apnsId: String? = nil, evidence: TokenEvidence? = nil
    ) {
        self.verdict = verdict
        self.status = status
        self.reason = reason
        self.detail = detail
        self.code = code
        self.retryable = retryable
        self.retryAfter = retryAfter
        self.apnsId = apnsId
        self.evidence = evidence
    }

    /// No answer arrived: `reason` says why (`timeout`, `connection_refused`…); `retryable`
    /// only when the failure proves the request was not processed.
    package static func unanswered(_ reason: PushDeliveryReason, retryable: Bool) -> ProviderAnswer {
        ProviderAnswer(.refused, status: nil, reason: reason, retryable: retryable)
    }

    /// The outcome the answer reads as: sent, invalid (a dead token) or failed.
    package var outcome: PushDeliveryOutcome {
        switch verdict {
        case .accepted: .sent
        case .tokenDead: .invalid
        case .retryWithFreshProviderToken, .throttled, .refused: .failed
        }
    }

    /// For a dead token: when the provider says it died.
    package var invalidSince: Int64? {
        if case .tokenDead(let since) = verdict { return since }
        return nil
    }
}

/// A parser of one provider's answers: status, headers (looked up by lowercase name) and body
/// to one `ProviderAnswer`. Pure, total, and bounded whatever the provider sends.
package protocol ProviderAnswerParser {
    static func parse(status: Int, body: [UInt8], header: (String) -> String?) -> ProviderAnswer
}

extension ProviderAnswerParser {
    /// Without headers (tests, fuzzing).
    package static func parse(status: Int, body: [UInt8]) -> ProviderAnswer { parse(status: status, body: body) { _ in nil } }
}
