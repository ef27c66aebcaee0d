#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushSync

/// The spec's limits in this process's memory: a token bucket per client IP (checked first)
/// and one per device token, each table bounded (50,000 keys by default; idle buckets are
/// evicted first, then the least recently used). Nothing is persisted; a restart forgets all.
public final class InMemoryPushRelayRateLimiter: PushRelayRateLimiter {
    private struct Tables {
        var clients: TokenBucketTable
        var devices: TokenBucketTable
    }

    public let clientLimit: PushRelayRateLimit
    public let deviceLimit: PushRelayRateLimit
    public let maximumKeys: Int
    private let now: @Sendable () -> Double
    private let tables: Locked<Tables>

    /// - Parameters:
    ///   - maximumKeys: buckets kept per table (client IPs, device tokens).
    ///   - now: monotonic seconds (the system's monotonic clock by default); tests move it by hand.
    public init(
        clientLimit: PushRelayRateLimit = .client, deviceLimit: PushRelayRateLimit = .device, maximumKeys: Int = 50_000,
        now: @escaping @Sendable () -> Double = InMemoryPushRelayRateLimiter.monotonicSeconds
    ) {
        self.clientLimit = clientLimit
        self.deviceLimit = deviceLimit
        self.maximumKeys = max(1, maximumKeys)
        self.now = now
        tables = Locked(
            Tables(
                clients: TokenBucketTable(limit: clientLimit, capacity: maximumKeys),
                devices: TokenBucketTable(limit: deviceLimit, capacity: maximumKeys)))
    }

    public func admit(client: String, device: String) async -> PushRelayAdmission {
        admitNow(client: client, device: device)
    }

    /// The same decision, synchronously (it never waits for anything but a short lock).
    public func admitNow(client: String, device: String) -> PushRelayAdmission {
        let time = now()
        return tables.withLock { tables in
            guard tables.clients.take(client, now: time) else { return .clientLimited }
            guard tables.devices.take(device, now: time) else { return .deviceLimited }
            return .admitted
        }
    }

    /// Keys held: (client IPs, device tokens).
    public var keyCounts: (clients: Int, devices: Int) {
        tables.withLock { ($0.clients.count, $0.devices.count) }
    }

    @Sendable public static func monotonicSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
