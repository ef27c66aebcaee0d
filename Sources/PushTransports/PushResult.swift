package import PushProviders
/// The per-device answer of a transport.
package struct PushResult: Sendable, Equatable, PushReasonCarrying {
    package var outcome: PushDeliveryOutcome
    /// Why: the provider's reason or code (`BadDeviceToken`, `UNREGISTERED`, `rate_limited`),
    /// a network error (`timeout`), or ours (`too_large`). Nil when sent with nothing to say.
    package var reason: PushDeliveryReason?
    /// What the reason's name does not say (a provider's message, the OAuth error), sanitized.
    package var detail: String?
    /// The HTTP status of the last answer, nil when none arrived.
    package var status: Int?
    /// Wall time from first byte sent to classification, retries included.
    package var latency: Duration
    /// APNs' `apns-id` of an accepted push.
    package var apnsId: String?
    /// For APNs 410: when Apple says the token stopped being valid (ms since 1970). A
    /// registration refreshed after that moment is not pruned.
    package var invalidSince: Int64?
    /// How many HTTP attempts were made (1 without retries).
    package var attempts: Int
    /// Web Push: the VAPID public key of the last attempt (after a key rotation, the previous
    /// key a browser subscribed with may be the one that worked).
    package var vapidPublicKey: String?

    package init(
        outcome: PushDeliveryOutcome, reason: PushDeliveryReason? = nil, detail: String? = nil, status: Int? = nil, latency: Duration = .zero,
        apnsId: String? = nil, invalidSince: Int64? = nil, attempts: Int = 1
    ) {
        self.outcome = outcome
        self.reason = reason
        self.detail = detail
        self.status = status
        self.latency = latency
        self.apnsId = apnsId
        self.invalidSince = invalidSince
        self.attempts = attempts
    }

    /// What `answer` comes to after `attempts` attempts over `latency`, by the hub's policy
    /// (`HubAnswerPolicy`: a dead token is `invalid`, everything but acceptance `failed`).
    package init(_ answer: ProviderAnswer, latency: Duration, attempts: Int) {
        self.init(
            outcome: HubAnswerPolicy.outcome(answer), reason: answer.reason, detail: answer.detail, status: answer.status, latency: latency,
            apnsId: answer.apnsId, invalidSince: HubAnswerPolicy.invalidSince(answer), attempts: attempts)
    }

    /// What one exchange came to, the words kept from its answer scrubbed of `secrets` (what we
    /// sent: the device token, an endpoint, a JWT) and of anything token-like.
    init(_ exchanged: ProviderExchangeResult, secrets: [String]) {
        self.init(exchanged.answer.scrubbed(secrets: secrets), latency: exchanged.latency, attempts: exchanged.attempts)
    }

    /// Failed before any request was made (e.g. `too_large`, a credential problem).
    static func refused(_ reason: PushDeliveryReason, detail: String? = nil) -> PushResult {
        PushResult(outcome: .failed, reason: reason, detail: detail, attempts: 0)
    }
}
