import PushEnvelope

/// The spec's limits shared by every relay instance on one Redis (`RELAY_REDIS_URL`): the
/// client IP's and the device token's token buckets live in Redis, each push decided by one
/// Lua script (`RedisBucketScript`, by `EVALSHA`), so the 31st push for a token within a minute
/// is refused whichever instance receives it.
///
/// **Fail-open.** When Redis cannot decide a push (unreachable, silent for longer than the
/// command timeout, an error reply) the push is decided by an `InMemoryPushRelayRateLimiter`
/// with the same limits, in this process, and the limiter says so in the log, in `status` and
/// in the relay's metrics (`hapi_push_relay_rate_limiter_degraded`), while its thread
/// reconnects with backoff. A relay that refused every push whenever its rate-limit store
/// hiccupped would be worse than one that limits locally for a while.
///
/// Redis is only ever called from the limiter's own thread, over one connection: no Swift
/// concurrency thread blocks on it.
public final class RedisPushRelayRateLimiter: PushRelayRateLimiter {
    public let configuration: PushRelayRedisConfiguration
    public let clientLimit: PushRelayRateLimit
    public let deviceLimit: PushRelayRateLimit
    private let worker: RedisAdmissionWorker
    private let local: InMemoryPushRelayRateLimiter
    private let report: RedisLimiterReport

    /// Starts the limiter's thread, which connects at once (this does not wait for it; see
    /// `PushRelayServer.start`, which does).
    ///
    /// - Parameter log: where the limiter's few lines go (connected, unavailable, back); none
    ///   by default. A line never holds the password.
    public init(
        configuration: PushRelayRedisConfiguration, clientLimit: PushRelayRateLimit = .client, deviceLimit: PushRelayRateLimit = .device,
        log: (@Sendable (String) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.clientLimit = clientLimit
        self.deviceLimit = deviceLimit
        local = InMemoryPushRelayRateLimiter(clientLimit: clientLimit, deviceLimit: deviceLimit)
        report = RedisLimiterReport(url: configuration.redactedURL, log: log ?? { _ in })
        worker = RedisAdmissionWorker(
            settings: .init(redis: configuration, clientLimit: clientLimit, deviceLimit: deviceLimit), report: report)
    }

    public func admit(client: String, device: String) async -> PushRelayAdmission {
        switch await worker.decide(clientKey: clientKey(client), deviceKey: deviceKey(device)) {
        case .decided(let admission):
            return admission
        case .unavailable:
            report.decidedLocally()
            return local.admitNow(client: client, device: device)
        }
    }

    /// Connected or not, degraded or not, and the counts behind the metrics.
    public var status: PushRelayRedisStatus { report.status }

    /// Waits for the first connection attempt: nil when connected, else why not (`.refused`:
    /// Redis answered and refused the configuration; `.unavailable`: it could not be reached).
    func firstConnection() async -> RedisLinkError? { await worker.firstAttempt() }

    /// Closes the connection and ends the thread; later pushes are decided in memory. The
    /// relay calls it when it stops.
    public func shutdown() async {
        await worker.shutdown()
    }

    /// `<prefix>client:<sha256 of the address>`: fixed length, and no address stored in Redis.
    func clientKey(_ client: String) -> [UInt8] {
        Array((configuration.keyPrefix + "client:" + Digest.hex(Digest.sha256(Array(client.utf8)))).utf8)
    }

    /// `<prefix>device:<the platform-scoped token digest>` (already a SHA-256).
    func deviceKey(_ device: String) -> [UInt8] {
        Array((configuration.keyPrefix + "device:" + device).utf8)
    }
}
