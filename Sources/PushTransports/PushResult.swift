/// What one send came to. Misreading a blip as `invalid` would unregister a live phone, so
/// `invalid` is reserved for answers that say the token is dead, and everything else is
/// `failed`.
public enum PushDeliveryOutcome: String, Sendable, Hashable {
    /// Accepted by the provider (not a handset receipt).
    case sent
    /// The provider says the token is dead: the dispatcher prunes it.
    case invalid
    /// Anything transient or ours: the registration is kept.
    case failed
}

/// The per-device answer of a transport.
package struct PushResult: Sendable, Equatable {
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

    /// The reason and its detail as one line (`NOT_FOUND: Requested entity was not found.`).
    package var reasonText: String? { reason.map { $0.text(detail: detail) } }

    /// Failed before any request was made (e.g. `too_large`, a credential problem).
    static func refused(_ reason: PushDeliveryReason, detail: String? = nil) -> PushResult {
        PushResult(outcome: .failed, reason: reason, detail: detail, attempts: 0)
    }
}

/// A classified answer before timing is attached: the pure part, shared by the transports,
/// their tests and the fuzz targets.
package struct Classification: Sendable, Equatable {
    package var outcome: PushDeliveryOutcome
    package var reason: PushDeliveryReason?
    /// A provider's message, sanitized.
    package var detail: String?
    /// Whether a retry policy may try again (429, 5xx, UNAVAILABLE): never for a dead token
    /// or a malformed request.
    package var retryable: Bool

    package init(outcome: PushDeliveryOutcome, reason: PushDeliveryReason?, detail: String? = nil, retryable: Bool = false) {
        self.outcome = outcome
        self.reason = reason
        self.detail = detail
        self.retryable = retryable
    }

    /// The reason and its detail as one line, as reports print it.
    package var reasonText: String? { reason.map { $0.text(detail: detail) } }
}
