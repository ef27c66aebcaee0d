import CHapiMicrohttpd
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushSync

/// What libmicrohttpd does not do by itself against slow and greedy clients: a deadline for a
/// whole request (not only for silence), and room for a fresh connection when the connection
/// limit is reached.
///
/// libmicrohttpd reports each connection's start and end (`MHD_OPTION_NOTIFY_CONNECTION`) and
/// each request's head, end of body and completion (the access handler and the completion
/// callback); this keeps one record per open connection from them. A sweep on a thread of its
/// own closes what missed its deadline. A connection is closed with `shutdown(2)` on its socket:
/// libmicrohttpd sees the end on its own thread and cleans up as for a client that went away.
/// That is safe from another thread because libmicrohttpd reports a connection closed (which
/// removes its record, under the same lock) before it closes the socket.
final class RelayConnectionGuard: Sendable {
    struct Settings: Sendable {
        /// The daemon's connection limit.
        var connectionLimit: Int
        /// Request line and headers, from the request's first byte.
        var headDeadlineMilliseconds: Int64
        /// The body, from the end of the headers.
        var bodyDeadlineMilliseconds: Int64
        /// How often the sweep looks.
        var sweepMilliseconds: Int64 = 250
    }

    /// Where a connection is in its current request.
    enum Phase: Sendable, Equatable {
        /// Between requests (or before the first): only the inactivity timeout applies.
        case waiting
        /// Bytes of a request arrived; its head is not complete.
        case head
        /// The head is in; the body is being read.
        case body
        /// The request is whole: the relay is answering (bounded by the provider timeout).
        case answering
        /// Shut down by this guard; libmicrohttpd has yet to report it closed.
        case closing
    }

    private struct Record {
        let socket: Int32
        var phase: Phase
        /// When the phase began (monotonic milliseconds).
        var since: Int64
        /// Bytes received on the socket when the phase began (`.waiting` only).
        var mark: Int64 = 0
        /// Orders phases begun in the same millisecond: the oldest idle is closed first.
        var serial: UInt64 = 0
    }

    private struct State {
        var records: [UInt: Record] = [:]
        /// When waiting connections were last asked about (every other pass).
        var lastProbe: Int64 = 0
        var passes = 0
        var serial: UInt64 = 0
        var stopped = false
        var deadlineClosed = 0
        var idleClosed = 0
    }

    let settings: Settings
    /// Free slots kept for fresh connections: when fewer remain, idle ones are closed.
    let headroom: Int
    private let state = Locked(State())

    init(settings: Settings) {
        self.settings = settings
        headroom = max(1, min(settings.connectionLimit / 20, 1000))
    }

    /// The sweep thread, kept so that it is detached (never leaked) when the guard goes.
    private let sweeper = Locked<PushThread?>(nil)

    /// Starts the sweep thread; it ends at its first sweep after `stop()`.
    func start() throws(PushThreadError) {
        let thread = try PushThread.start(name: "hapi-relay-guard") { [self] in
            while true {
                usleep(useconds_t(clamping: settings.sweepMilliseconds * 1000))
                if !sweep(now: Self.now()) { return }
            }
        }
        sweeper.withLock { $0 = thread }
    }

    func stop() { state.withLock { $0.stopped = true } }

    /// Connections closed for missing a deadline, and idle ones closed to make room.
    var closedCounts: (deadline: Int, idle: Int) { state.withLock { ($0.deadlineClosed, $0.idleClosed) } }

    var openConnections: Int { state.withLock { $0.records.count } }

    // MARK: - Events (on libmicrohttpd's threads)

    func connectionStarted(_ connection: OpaquePointer) {
        let socket = hapi_mhd_connection_fd(connection)
        let key = Self.key(connection)
        let now = Self.now()
        state.withLock { state in
            state.serial += 1
            state.records[key] = Record(socket: socket, phase: .waiting, since: now, serial: state.serial)
            let open = state.records.count
            guard open > settings.connectionLimit - headroom else { return }
            // Close the oldest idle connections, down to twice the headroom free, so this
            // scan runs once per batch rather than once per new connection.
            let target = open - max(0, settings.connectionLimit - 2 * headroom)
            var idle = state.records.filter { $0.key != key && $0.value.phase == .waiting }.map { ($0.key, $0.value.serial) }
            idle.sort { $0.1 < $1.1 }
            for (idleKey, _) in idle.prefix(target) {
                guard let record = state.records[idleKey] else { continue }
                shutdown(record.socket, Int32(SHUT_RDWR))
                state.records[idleKey]?.phase = .closing
                state.idleClosed += 1
            }
        }
    }

    func connectionClosed(_ connection: OpaquePointer) {
        let key = Self.key(connection)
        state.withLock { _ = $0.records.removeValue(forKey: key) }
    }

    /// The request's head is complete; its body (if any) is next.
    func headReceived(_ connection: OpaquePointer) { move(connection, to: .body) }

    /// The request is whole; the answer may take the provider's time.
    func requestReceived(_ connection: OpaquePointer) { move(connection, to: .answering) }

    /// The answer is sent; the connection waits for the next request.
    func requestCompleted(_ connection: OpaquePointer) { move(connection, to: .waiting, markBytes: true) }

    private func move(_ connection: OpaquePointer, to phase: Phase, markBytes: Bool = false) {
        let key = Self.key(connection)
        let now = Self.now()
        // On the connection's own thread: its socket is open; ask the kernel before the lock.
        let mark = markBytes ? max(0, hapi_tcp_bytes_received(hapi_mhd_connection_fd(connection))) : 0
        state.withLock { state in
            guard let record = state.records[key], record.phase != .closing, record.phase != phase else { return }
            state.serial += 1
            state.records[key] = Record(socket: record.socket, phase: phase, since: now, mark: mark, serial: state.serial)
        }
    }

    // MARK: - The sweep

    /// One pass: starts the head deadline of waiting connections that received bytes, and
    /// closes those past a deadline. Returns false once stopped.
    ///
    /// The kernel is asked about waiting connections (one `getsockopt` each) outside the lock,
    /// every other pass: with ten thousand idle hubs, holding the lock meanwhile would stall
    /// libmicrohttpd's threads. A record that changed in between (its serial) is left alone.
    @discardableResult
    func sweep(now: Int64) -> Bool {
        let waiting = state.withLock { state -> [(key: UInt, socket: Int32, mark: Int64, serial: UInt64)]? in
            guard !state.stopped else { return nil }
            state.passes += 1
            guard state.passes % 2 == 0 else { return [] }
            return state.records.compactMap { key, record in
                record.phase == .waiting ? (key, record.socket, record.mark, record.serial) : nil
            }
        }
        guard let waiting else { return false }
        // Bytes since the phase began: a request has started. Its first byte came after the
        // previous probe (which saw none), so the deadline counts from then, or from the
        // phase's start if later.
        let started = waiting.filter { hapi_tcp_bytes_received($0.socket) > $0.mark }
        return state.withLock { state in
            guard !state.stopped else { return false }
            let previous = state.lastProbe
            if state.passes % 2 == 0 { state.lastProbe = now }
            for entry in started {
                guard let record = state.records[entry.key], record.serial == entry.serial, record.phase == .waiting else { continue }
                state.records[entry.key] = Record(socket: record.socket, phase: .head, since: max(record.since, previous), serial: record.serial)
            }
            for (key, record) in state.records {
                switch record.phase {
                case .head:
                    if now - record.since > settings.headDeadlineMilliseconds { close(key, record, &state) }
                case .body:
                    if now - record.since > settings.bodyDeadlineMilliseconds { close(key, record, &state) }
                case .waiting, .answering, .closing:
                    continue
                }
            }
            return true
        }
    }

    private func close(_ key: UInt, _ record: Record, _ state: inout State) {
        shutdown(record.socket, Int32(SHUT_RDWR))
        state.records[key]?.phase = .closing
        state.deadlineClosed += 1
    }

    private static func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }

    /// CLOCK_MONOTONIC in milliseconds.
    static func now() -> Int64 { hapi_monotonic_ms() }
}
