/// What one device's delivery came to, from the provider's answer to the dispatch report: the
/// one outcome enum of the package. Misreading a blip as `invalid` would unregister a live
/// phone, so `invalid` is reserved for answers that say the token is dead, and everything else
/// is `failed`.
public enum PushDeliveryOutcome: String, Sendable, Hashable {
    /// Accepted by the provider (not a handset receipt).
    case sent
    /// The provider says the token is dead: the dispatcher prunes it.
    case invalid
    /// Anything transient or ours: the registration is kept.
    case failed
    /// Not attempted: the channel is off, or the device cannot be reached this way. Only the
    /// dispatcher decides this; a transport never answers it.
    case skipped
}

/// Anything that carries a reason and its detail: the one place they become one line.
package protocol PushReasonCarrying {
    var reason: PushDeliveryReason? { get }
    var detail: String? { get }
}

extension PushReasonCarrying {
    /// The reason and its detail as one line (`NOT_FOUND: Requested entity was not found.`).
    package var reasonText: String? { reason.map { $0.text(detail: detail) } }
}
