import PushSync
import PushTelemetry

/// Every counter the relay keeps, in one place (so a shared metrics sink can later read them
/// from here), and their Prometheus text rendering for the loopback metrics listener.
final class RelayMetrics: Sendable {
    /// Upper bounds of the push duration histogram, in seconds.
    static let durationBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    struct Snapshot: Sendable, Equatable {
        /// HTTP answers by status.
        var answers: [Int: Int] = [:]
        /// Valid pushes by "platform outcome".
        var pushes: [PushKey: Int] = [:]
        /// Pushes refused by the rate limiter, by scope (`client`, `device`).
        var rateLimited: [String: Int] = [:]
        /// Cumulative histogram counts of push durations (same order as `durationBuckets`).
        var durationCounts = [Int](repeating: 0, count: RelayMetrics.durationBuckets.count)
        var durationSum: Double = 0
        var durationCount = 0
        /// Pushes being answered right now.
        var inFlight = 0
    }

    struct PushKey: Sendable, Hashable, Comparable {
        var platform: String
        var outcome: String
        static func < (a: PushKey, b: PushKey) -> Bool { (a.platform, a.outcome) < (b.platform, b.outcome) }
    }

    private let state = Locked(Snapshot())
    /// The shared limiter's health, when the limits live in Redis.
    private let redisStatus: (@Sendable () -> PushRelayRedisStatus)?

    init(redisStatus: (@Sendable () -> PushRelayRedisStatus)? = nil) {
        self.redisStatus = redisStatus
    }

    var snapshot: Snapshot { state.withLock { $0 } }

    func recordAnswer(status: Int) {
        state.withLock { $0.answers[status, default: 0] += 1 }
    }

    func pushStarted() { state.withLock { $0.inFlight += 1 } }

    func pushFinished(platform: String, outcome: String, seconds: Double, limitedBy scope: String?) {
        state.withLock { state in
            state.inFlight -= 1
            state.pushes[PushKey(platform: platform, outcome: outcome), default: 0] += 1
            if let scope { state.rateLimited[scope, default: 0] += 1 }
            state.durationSum += seconds
            state.durationCount += 1
            for (index, bound) in Self.durationBuckets.enumerated() where seconds <= bound { state.durationCounts[index] += 1 }
        }
    }

    /// Prometheus text exposition format 0.0.4, through the hub's renderer (labels escaped).
    func render() -> String {
        let s = snapshot
        var out = PrometheusText()
        out.family("hapi_push_relay_http_responses_total", .counter, help: "HTTP answers by status code.")
        for status in s.answers.keys.sorted() {
            out.sample("hapi_push_relay_http_responses_total", .init([("status", "\(status)")]), s.answers[status] ?? 0)
        }
        out.family("hapi_push_relay_pushes_total", .counter, help: "Valid pushes by platform and outcome (ok or the answer's code).")
        for key in s.pushes.keys.sorted() {
            out.sample("hapi_push_relay_pushes_total", .init([("platform", key.platform), ("outcome", key.outcome)]), s.pushes[key] ?? 0)
        }
        out.family("hapi_push_relay_rate_limited_total", .counter, help: "Pushes refused by the relay's own limit, by scope.")
        for scope in ["client", "device"] {
            out.sample("hapi_push_relay_rate_limited_total", .init([("scope", scope)]), s.rateLimited[scope] ?? 0)
        }
        out.family("hapi_push_relay_push_duration_seconds", .histogram, help: "Time from a valid push to its answer.")
        // The sum as Swift prints a Double (`0.0`), as the relay always has.
        out.histogram(
            "hapi_push_relay_push_duration_seconds", bounds: Self.durationBuckets, cumulativeCounts: s.durationCounts,
            count: s.durationCount, sum: "\(s.durationSum)")
        out.family("hapi_push_relay_pushes_in_flight", .gauge, help: "Pushes waiting for their answer.")
        out.sample("hapi_push_relay_pushes_in_flight", s.inFlight)
        if let redis = redisStatus?() {
            out.family(
                "hapi_push_relay_redis_errors_total", .counter,
                help: "Failed Redis connection attempts, lost connections and failed rate-limit script calls.")
            out.sample("hapi_push_relay_redis_errors_total", redis.errors)
            out.family("hapi_push_relay_redis_connected", .gauge, help: "1 while a connection to the rate-limit Redis is up.")
            out.sample("hapi_push_relay_redis_connected", redis.isConnected ? 1 : 0)
            out.family(
                "hapi_push_relay_rate_limiter_degraded", .gauge,
                help: "1 while rate limits are decided in this process because Redis cannot be used (fail-open).")
            out.sample("hapi_push_relay_rate_limiter_degraded", redis.isDegraded ? 1 : 0)
            out.family(
                "hapi_push_relay_rate_limiter_local_decisions_total", .counter,
                help: "Pushes whose rate limit was decided in this process because Redis could not decide it.")
            out.sample("hapi_push_relay_rate_limiter_local_decisions_total", redis.localDecisions)
        }
        return out.text
    }
}
