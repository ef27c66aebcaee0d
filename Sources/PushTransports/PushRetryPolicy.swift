#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether and how a transport retries a transient answer (429, 5xx, FCM `UNAVAILABLE`).
///
/// Off by default: the relay does not queue, and the hub's next event is a natural retry.
/// When on, retries use jittered exponential backoff, honour `Retry-After`, and stop at the
/// total deadline. An answer that says the token is dead or the request is malformed is never
/// retried. (Independently of this policy, and without using up one of its attempts, a push
/// Apple refused for a stale provider token goes once more with a fresh one, and a refused
/// HTTP/2 stream once more within its own timeout, because both say the push was not processed.)
public struct PushRetryPolicy: Sendable {
    /// Attempts in all; 1 means no retries.
    public var maximumAttempts: Int
    public var initialBackoff: Duration
    public var maximumBackoff: Duration
    /// No retry starts after this much time since the first attempt.
    public var totalDeadline: Duration

    public init(maximumAttempts: Int, initialBackoff: Duration = .milliseconds(200), maximumBackoff: Duration = .seconds(5),
        totalDeadline: Duration = .seconds(20))
    {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.totalDeadline = totalDeadline
    }

    /// No retries (the default).
    public static let none = PushRetryPolicy(maximumAttempts: 1)

    /// The wait before attempt `attempt + 1` (attempt counts from 1), or nil to stop.
    /// `retryAfter` (seconds from the server) wins over the computed backoff when longer.
    func delay(afterAttempt attempt: Int, elapsed: Duration, retryAfter: Duration?) -> Duration? {
        guard attempt < maximumAttempts else { return nil }
        let exponent = min(max(attempt - 1, 0), 20)
        let base = min(initialBackoff * (1 << exponent), maximumBackoff)
        // Full jitter between half and the whole backoff, so a fleet of hubs does not retry in step.
        let jittered = base * Double.random(in: 0.5...1.0)
        let wait = max(jittered, retryAfter ?? .zero)
        guard elapsed + wait < totalDeadline else { return nil }
        return wait
    }
}

