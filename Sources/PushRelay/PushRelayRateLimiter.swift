/// Decides whether a push may go out: the relay's abuse limit (the spec's token buckets, per
/// client IP and per device token). The relay holds one and asks it once per valid push.
///
/// A protocol because the budget can live in this process (`InMemoryPushRelayRateLimiter`,
/// the default) or be shared by several relay instances in Redis.
public protocol PushRelayRateLimiter: Sendable {
    /// Takes one push from `client`'s budget and then one from `device`'s. The client is checked
    /// first: a push it refuses costs the device nothing.
    ///
    /// - Parameters:
    ///   - client: the client's IP address (the first `X-Forwarded-For` hop behind a trusted
    ///     proxy), or `unknown`.
    ///   - device: the platform-scoped SHA-256 of the device token, 64 hex digits
    ///     (`sha256("ios:" + token)`): no implementation ever sees or stores a token.
    func admit(client: String, device: String) async -> PushRelayAdmission
}

/// What a rate limiter decided for one push.
public enum PushRelayAdmission: String, Sendable, Hashable {
    case admitted
    /// The client IP's budget is spent.
    case clientLimited = "client"
    /// The device token's budget is spent.
    case deviceLimited = "device"
}

/// One token bucket's shape: `burst` pushes at once, refilled continuously at `perMinute`.
public struct PushRelayRateLimit: Sendable, Hashable {
    public var burst: Int
    public var perMinute: Int

    public init(burst: Int, perMinute: Int) {
        self.burst = max(1, burst)
        self.perMinute = max(1, perMinute)
    }

    /// The spec's per-device-token limit: 30 a minute, burst 30.
    public static let device = PushRelayRateLimit(burst: 30, perMinute: 30)
    /// The spec's per-client-IP limit: 300 a minute, burst 300.
    public static let client = PushRelayRateLimit(burst: 300, perMinute: 300)
}
