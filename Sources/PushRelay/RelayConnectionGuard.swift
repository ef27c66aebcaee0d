import CHapiMicrohttpd
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushSync

/// What libmicrohttpd does not do by itself against slow and greedy clients: a deadline for a
/// whole request (not only for silence), room for a fresh connection when the connection
/// limit is reached, and a per-address limit that makes room instead of refusing.
///
/// The per-address limit (libmicrohttpd's own is off when this guard runs): when a new
/// connection takes its address past the limit, the address's connection whose current request
/// began longest ago and is still incomplete — one that has never completed a request, or is
/// in the middle of a request's head or body — is closed to make room. Connections being
/// answered, and idle ones that have completed a request, are never closed for it: when those
/// are all the address has, the new connection is closed instead (refused, as before).
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
        /// Connections at once from one peer address; 0 for no limit.
        var connectionsPerAddress: Int = 0
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
        /// The peer address as text ("" when unknown: no per-address limit applies).
        let address: String
        var phase: Phase
        /// When the phase began (monotonic milliseconds).
        var since: Int64
        /// Bytes received on the socket when the phase began (`.waiting` only).
        var mark: Int64 = 0
        /// Orders phases begun in the same millisecond: the oldest idle is closed first.
        var serial: UInt64 = 0
        /// A request on this connection has been answered (or ended) at least once.
        var served = false

        /// Whether the per-address limit may close it: its current request is incomplete.
        var evictable: Bool {
            switch phase {
            case .head, .body: true
            case .waiting: !served
            case .answering, .closing: false
            }
        }
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
        /// Open connections by peer address (only with a per-address limit).
        var byAddress: [String: [UInt]] = [:]
        var addressEvicted = 0
        var addressRefused = 0
    }

    let settings: Settings
    /// Free slots kept for fresh connections: when fewer remain, idle ones are closed.
    let headroom: Int
    private let state = Locked(State())

    init(settings: Settings) {
        self.settings = settings
        headroom = max(1, min(settings.connectionLimit / 20, 1000))
    }

    /// The sweep thread, joined by `stop()`.
    private let sweeper = Locked<PushThread?>(nil)
    /// A pipe whose write end `stop()` closes, which wakes the sweep thread from its wait at
    /// once; -1s when the system gave none (the thread then ends at its next sweep).
    private let wake = Locked<(read: Int32, write: Int32)>((-1, -1))

    /// Starts the sweep thread; it ends when `stop()` is called.
    func start() throws(PushThreadError) {
        var fds: [Int32] = [-1, -1]
        let piped = pipe(&fds) == 0
        if piped { for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) } }
        let readEnd: Int32 = piped ? fds[0] : -1
        if piped { wake.withLock { $0 = (fds[0], fds[1]) } }
        let interval = Int32(clamping: settings.sweepMilliseconds)
        let thread: PushThread
        do {
            thread = try PushThread.start(name: "hapi-relay-guard") { [self] in
                var wait = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
                while true {
                    // The pipe reads as ready (end of file) once stop() closes its write end.
                    if readEnd >= 0 { wait.revents = 0; _ = poll(&wait, 1, interval) } else { _ = poll(nil, 0, interval) }
                    if !sweep(now: Self.now()) { return }
                }
            }
        } catch {
            closeWake()
            throw error
        }
        sweeper.withLock { $0 = thread }
    }

    /// Stops the sweep thread and returns once it has been joined. Blocks (at most one sweep):
    /// call it off the concurrency pool. Idempotent.
    func stop() {
        state.withLock { $0.stopped = true }
        let writeEnd = wake.withLock { wake -> Int32 in
            defer { wake.write = -1 }
            return wake.write
        }
        if writeEnd >= 0 { closeDescriptor(writeEnd) }
        // Kept (joining twice returns at once), so `sweeperRunning` can tell it has ended.
        sweeper.withLock { $0 }?.join()
        closeWake()
    }

    private func closeWake() {
        let ends = wake.withLock { wake -> (Int32, Int32) in
            defer { wake = (-1, -1) }
            return wake
        }
        if ends.0 >= 0 { closeDescriptor(ends.0) }
        if ends.1 >= 0 { closeDescriptor(ends.1) }
    }

    /// Whether a sweep thread is running (started and not yet joined by `stop()`).
    var sweeperRunning: Bool { sweeper.withLock { $0.map { !$0.hasEnded } ?? false } }

    /// Connections closed for missing a deadline, and idle ones closed to make room.
    var closedCounts: (deadline: Int, idle: Int) { state.withLock { ($0.deadlineClosed, $0.idleClosed) } }

    /// Connections closed to make room under the per-address limit (`evicted`), and new ones
    /// closed because their address had only complete or busy connections (`refused`).
    var addressCounts: (evicted: Int, refused: Int) { state.withLock { ($0.addressEvicted, $0.addressRefused) } }

    var openConnections: Int { state.withLock { $0.records.count } }

    // MARK: - Events (on libmicrohttpd's threads)

    func connectionStarted(_ connection: OpaquePointer) {
        let address = settings.connectionsPerAddress > 0 ? Self.clientAddress(connection) : ""
        started(key: Self.key(connection), socket: hapi_mhd_connection_fd(connection), address: address)
    }

    /// A connection opened (`key` names it until `closed(key:)`), on `socket`, from `address`.
    func started(key: UInt, socket: Int32, address: String) {
        let now = Self.now()
        let perAddress = settings.connectionsPerAddress
        state.withLock { state in
            state.serial += 1
            state.records[key] = Record(socket: socket, address: address, phase: .waiting, since: now, serial: state.serial)
            if !address.isEmpty {
                state.byAddress[address, default: []].append(key)
                if !makeRoom(for: key, address: address, limit: perAddress, &state) { return }
            }
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

    /// The per-address limit for a connection just recorded. Returns false when the new
    /// connection itself was closed (its address had nothing it may close).
    private func makeRoom(for key: UInt, address: String, limit: Int, _ state: inout State) -> Bool {
        guard let keys = state.byAddress[address], keys.count > limit else { return true }
        var live = 0
        var candidates: [(key: UInt, since: Int64, serial: UInt64)] = []
        for other in keys {
            guard let record = state.records[other], record.phase != .closing else { continue }
            live += 1
            guard other != key, record.evictable else { continue }
            candidates.append((other, record.since, record.serial))
        }
        guard live > limit else { return true }
        candidates.sort { ($0.since, $0.serial) < ($1.since, $1.serial) }
        // The oldest incomplete connection, unless a whole request head already waits in its
        // socket for libmicrohttpd to read (it is about to be answered, not slow: a client's
        // fresh connection during a burst of the attacker's); a few are asked, oldest first.
        let victim = candidates.prefix(Self.pendingHeadProbes).first { candidate in
            guard let record = state.records[candidate.key], record.phase == .waiting || record.phase == .head else { return true }
            return !Self.headPending(record.socket)
        } ?? candidates.first
        guard let victim, let record = state.records[victim.key] else {
            if let record = state.records[key] { shutdown(record.socket, Int32(SHUT_RDWR)) }
            state.records[key]?.phase = .closing
            state.addressRefused += 1
            return false
        }
        shutdown(record.socket, Int32(SHUT_RDWR))
        state.records[victim.key]?.phase = .closing
        state.addressEvicted += 1
        return true
    }

    /// How many of an address's oldest incomplete connections `makeRoom` asks about a waiting
    /// head before it closes the oldest regardless.
    static let pendingHeadProbes = 8

    /// Whether the socket's receive queue holds the end of a request head (an empty line) that
    /// libmicrohttpd has not read yet. A peek, never a read: the bytes stay for libmicrohttpd.
    static func headPending(_ socket: Int32) -> Bool {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            let count = recv(socket, base, buffer.count, Int32(MSG_PEEK | MSG_DONTWAIT))
            guard count >= 4 else { return false }
            let bytes = UnsafeBufferPointer(start: base, count: count)
            for index in 3..<count where bytes[index] == 10 && bytes[index - 1] == 13 && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
                return true
            }
            return false
        }
    }

    func connectionClosed(_ connection: OpaquePointer) { closed(key: Self.key(connection)) }

    func closed(key: UInt) {
        state.withLock { state in
            guard let record = state.records.removeValue(forKey: key), !record.address.isEmpty else { return }
            guard var keys = state.byAddress[record.address] else { return }
            keys.removeAll { $0 == key }
            state.byAddress[record.address] = keys.isEmpty ? nil : keys
        }
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
        let mark = markBytes ? max(0, Platform.tcpBytesReceived(hapi_mhd_connection_fd(connection))) : 0
        state.withLock { state in
            guard var record = state.records[key], record.phase != .closing, record.phase != phase else { return }
            state.serial += 1
            record.phase = phase
            record.since = now
            record.mark = mark
            record.serial = state.serial
            if markBytes { record.served = true }
            state.records[key] = record
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
        let started = waiting.filter { Platform.tcpBytesReceived($0.socket) > $0.mark }
        return state.withLock { state in
            guard !state.stopped else { return false }
            let previous = state.lastProbe
            if state.passes % 2 == 0 { state.lastProbe = now }
            for entry in started {
                guard var record = state.records[entry.key], record.serial == entry.serial, record.phase == .waiting else { continue }
                record.phase = .head
                record.since = max(record.since, previous)
                record.mark = 0
                state.records[entry.key] = record
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

    /// The peer's address as text ("" when unknown).
    static func clientAddress(_ connection: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        guard hapi_mhd_client_address(connection, &buffer, buffer.count) else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(connection))) }

    /// CLOCK_MONOTONIC in milliseconds.
    static func now() -> Int64 { hapi_monotonic_ms() }
}

/// `close(2)`, named apart from the guard's own `close` of a connection.
private func closeDescriptor(_ fd: Int32) { _ = close(fd) }
