import PushSync

/// The health of a Redis-backed limiter as the relay's metrics and log tell it.
public struct PushRelayRedisStatus: Sendable, Equatable {
    /// A connection to Redis is up (as of the last attempt or command).
    public var isConnected: Bool
    /// Limits are being decided in this process because Redis could not be used (set by any
    /// failure, cleared when Redis answers again).
    public var isDegraded: Bool
    /// Failed connection attempts, lost connections and failed script calls so far.
    public var errors: Int
    /// Pushes whose limit was decided in this process because Redis could not decide it.
    public var localDecisions: Int
    /// Why Redis could not be used last (printable, bounded, never the password).
    public var lastError: String?
}

/// Keeps the status and writes the log's few limiter lines: on the transitions (connected,
/// unavailable, back) and, while Redis stays away, a reminder each minute, never one per push.
final class RedisLimiterReport: Sendable {
    private struct State {
        var status = PushRelayRedisStatus(isConnected: false, isDegraded: false, errors: 0, localDecisions: 0, lastError: nil)
        var everConnected = false
        var degradedSince: ContinuousClock.Instant?
        var localAtDegradation = 0
        var lastReminder: ContinuousClock.Instant?
        /// The server answered but could not run the script (a replica, still loading): a new
        /// connection to it proves nothing, only a push decided in Redis ends the degradation.
        var backOnlyWhenDecided = false
    }

    static let reminderInterval: Duration = .seconds(60)

    let url: String
    private let log: @Sendable (String) -> Void
    private let state = Locked(State())

    init(url: String, log: @escaping @Sendable (String) -> Void) {
        self.url = url
        self.log = log
    }

    var status: PushRelayRedisStatus { state.withLock { $0.status } }

    /// A connection is ready (authenticated, database selected, script loaded).
    func connected() {
        let line = state.withLock { state -> String? in
            state.status.isConnected = true
            defer { state.everConnected = true }
            if state.status.isDegraded, !state.backOnlyWhenDecided { return recovered(&state) }
            return state.everConnected ? nil : "rate limits: shared in \(url)"
        }
        if let line { log(line) }
    }

    /// Redis decided at least one push.
    func decidedInRedis() {
        let line = state.withLock { state -> String? in
            state.status.isConnected = true
            state.backOnlyWhenDecided = false
            return state.status.isDegraded ? recovered(&state) : nil
        }
        if let line { log(line) }
    }

    /// A push Redis could not decide was decided in this process.
    func decidedLocally() {
        state.withLock { $0.status.localDecisions += 1 }
    }

    /// An attempt or a command failed (`connection`: and there is no connection now).
    func failed(_ error: RedisLinkError, connection lost: Bool = false, serverCannotDecide: Bool = false) {
        let now = ContinuousClock.now
        let line = state.withLock { state -> String? in
            state.status.errors += 1
            if serverCannotDecide { state.backOnlyWhenDecided = true }
            if lost { state.status.isConnected = false }
            state.status.lastError = error.message
            if !state.status.isDegraded {
                state.status.isDegraded = true
                state.degradedSince = now
                state.lastReminder = now
                state.localAtDegradation = state.status.localDecisions
                return "rate limits: \(url) unavailable (\(error.message)): limiting in this process until it is back"
            }
            if let last = state.lastReminder, now - last >= Self.reminderInterval {
                state.lastReminder = now
                let local = state.status.localDecisions - state.localAtDegradation
                return "rate limits: \(url) still unavailable (\(error.message)): \(local) pushes limited in this process so far"
            }
            return nil
        }
        if let line { log(line) }
    }

    private func recovered(_ state: inout State) -> String {
        state.status.isDegraded = false
        let local = state.status.localDecisions - state.localAtDegradation
        var after = ""
        if let since = state.degradedSince {
            let elapsed = ContinuousClock.now - since
            let tenths = elapsed.wholeMilliseconds / 100
            after = " after \(tenths / 10).\(tenths % 10) s"
        }
        state.degradedSince = nil
        return "rate limits: \(url) back\(after): shared again (\(local) pushes were limited in this process meanwhile)"
    }
}
