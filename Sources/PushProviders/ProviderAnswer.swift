/// One provider answer, read: what the provider said, in the terms every policy shares. No
/// policy here: what an answer means to its caller lives beside the caller (`HubAnswerPolicy`:
/// prune, keep or retry; `RelayProviderOutcome`: the status and code the relay answers).
package struct ProviderAnswer: Sendable, Equatable, PushReasonCarrying {
    /// What the provider said, as a fact about the request, the device token or the provider.
    package enum Said: Sendable, Equatable {
        /// Accepted (not a handset receipt).
        case accepted
        /// In the provider's explicit words, the device token (or subscription) is dead.
        /// `since`: the provider's own moment (APNs `timestamp`, ms since 1970).
        case tokenDead(since: Int64?)
        /// Our provider token (the APNs JWT) is too old; the request was not processed.
        case providerTokenExpired
        /// The provider throttles us (429); see `retryAfter`.
        case throttled
        /// The provider throttles the minting of our provider tokens (APNs
        /// `TooManyProviderTokenUpdates`): another request now would make it worse.
        case providerTokenUpdatesThrottled
        /// A failure the provider documents as passing (a 5xx it names, `UNAVAILABLE`).
        case unavailable
        /// The request was refused for anything else (our message, our credentials, a proxy).
        case refused
        /// No answer arrived. `notProcessed`: the failure proves the provider never saw the
        /// request (no connection, a refused stream); a timeout or a lost connection does not.
        case unanswered(notProcessed: Bool)
    }

    /// What the answer says about the token, whatever else it says. The hub prunes on
    /// `.tokenDead`; the relay, which answers like the official relay, on fewer words.
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

    package var said: Said
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
    /// The answer's `Retry-After`, as delay-seconds.
    package var retryAfter: Duration?
    /// APNs' `apns-id` of an accepted push.
    package var apnsId: String?
    package var evidence: TokenEvidence?

    package init(
        _ said: Said, status: Int?, reason: PushDeliveryReason? = nil, detail: String? = nil, code: String? = nil, retryAfter: Duration? = nil,
        apnsId: String? = nil, evidence: TokenEvidence? = nil
    ) {
        self.said = said
        self.status = status
        self.reason = reason
        self.detail = detail
        self.code = code
        self.retryAfter = retryAfter
        self.apnsId = apnsId
        self.evidence = evidence
    }

    /// No answer arrived: `reason` says why (`timeout`, `connection_refused`…).
    package static func unanswered(_ reason: PushDeliveryReason, notProcessed: Bool) -> ProviderAnswer {
        ProviderAnswer(.unanswered(notProcessed: notProcessed), status: nil, reason: reason)
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
