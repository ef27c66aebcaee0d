/// One origin's HTTP/2 connection pool as a value: which connections it has, what each can take,
/// when to open another, when to probe an idle one and how long to wait after a failed connect.
/// No sockets, no nghttp2 and no clocks of its own (every event brings its `now`), so each rule
/// is testable on its own (`H2PoolStateMachineTests`); `H2Loop` keeps one per origin, tells it
/// what happened and does what it answers.
///
/// The rules:
/// - **Stream limits.** A connection takes streams only once the server's SETTINGS are known,
///   up to `min(SETTINGS_MAX_CONCURRENT_STREAMS, maximumStreamsPerConnection)`, so a server's
///   limit is never overrun. Another connection opens only when every usable one is full and
///   none is still being established, up to `maximumConnections`.
/// - **GOAWAY** (or stream ids running out): the connection takes no new streams and no longer
///   counts against `maximumConnections`, so a replacement may open; it closes once its last
///   stream ends.
/// - **Idle PING**: a connection that has received nothing for `pingInterval` is sent one PING;
///   unanswered for `pingTimeout`, the connection is dead.
/// - **Connect backoff**: a failed connect fails what waits for the origin when nothing else can
///   serve it (a caller learns at once that the origin is unreachable), and the next connect to
///   it waits 100 ms, doubling per consecutive failure up to 5 s, until one connects (its
///   server's SETTINGS arrive; a connection that closes before them counts as failed, without
///   failing what waits, which then waits for the next attempt). A request
///   that arrives meanwhile waits for that attempt, within its own deadline; if the deadline
///   comes first it fails with the last connect error. A burst against a dead origin so costs
///   one connect per backoff period, not one per request.
struct H2PoolStateMachine {
    struct Settings: Sendable, Equatable {
        var maximumConnections: Int
        var maximumStreamsPerConnection: Int
        var pingInterval: Duration
        var pingTimeout: Duration
        var firstConnectBackoff: Duration = .milliseconds(100)
        var maximumConnectBackoff: Duration = .seconds(5)
    }

    enum Phase: Sendable, Equatable {
        /// Resolving, tunnelling, connecting or in the TLS handshake.
        case connecting
        case open
        /// GOAWAY received (or stream ids nearly spent): no new streams.
        case draining
    }

    struct Connection: Sendable, Equatable {
        let id: UInt64
        var phase: Phase = .connecting
        /// The server's first SETTINGS arrived: until then `streamLimit` is a guess.
        var settingsKnown = false
        var streamLimit: Int
        var streams = 0
        /// When something last arrived (or the connection opened): the PING clock.
        var lastHeardAt: ContinuousClock.Instant
        /// An unanswered PING's deadline.
        var pingDeadline: ContinuousClock.Instant?

        /// Not yet known to be usable at full width.
        var isEstablishing: Bool { phase == .connecting || (phase == .open && !settingsKnown) }
        var hasFreeStream: Bool { phase == .open && settingsKnown && streams < streamLimit }
    }

    /// What a connect failure asks of the loop.
    enum ConnectFailure: Sendable, Equatable {
        /// Nothing else can serve the origin: fail every request waiting for it.
        case failWaiting
        /// Another connection is open or connecting: the waiting requests stay queued.
        case keepWaiting
    }

    /// What the passing of time asks of the loop, per connection.
    enum Timer: Sendable, Equatable {
        case sendPing(connection: UInt64)
        case pingUnanswered(connection: UInt64)
    }

    let settings: Settings
    private(set) var connections: [Connection] = []
    /// Connects that failed in a row (reset when one connects).
    private(set) var consecutiveConnectFailures = 0
    /// No connect before this instant (the backoff after a failed one).
    private(set) var nextConnectAt: ContinuousClock.Instant?
    /// The last failed connect's error, for requests whose deadline passes during the backoff.
    private(set) var lastConnectError: HTTPClientError?

    init(settings: Settings) {
        self.settings = settings
    }

    // MARK: - Decisions

    /// The connection a waiting request should start its stream on, if any has room.
    var connectionWithFreeStream: UInt64? {
        connections.first(where: \.hasFreeStream)?.id
    }

    /// Whether a new connection should open now for requests that are waiting: every usable
    /// one is full, none is being established, fewer than the maximum are usable, and no
    /// backoff is running.
    func shouldOpenConnection(now: ContinuousClock.Instant) -> Bool {
        if let nextConnectAt, now < nextConnectAt { return false }
        guard !connections.contains(where: { $0.isEstablishing || $0.hasFreeStream }) else { return false }
        return connections.count(where: { $0.phase != .draining }) < settings.maximumConnections
    }

    /// Something is being established (the loop keeps its short sweep running meanwhile).
    var isEstablishing: Bool { connections.contains(where: \.isEstablishing) }

    /// A draining connection whose last stream has ended: it can close.
    func isDrained(_ id: UInt64) -> Bool {
        guard let connection = connections.first(where: { $0.id == id }) else { return false }
        return connection.phase == .draining && connection.streams == 0
    }

    /// What a request that waited past its deadline fails with: the last connect error when no
    /// connect has succeeded since it failed and no connection is open (the backoff kept the
    /// origin unconnected), a plain timeout otherwise (it waited for a stream).
    var waitingTimeoutError: HTTPClientError {
        if let lastConnectError, !connections.contains(where: { $0.phase == .open }) {
            let detail = lastConnectError.detail.map { $0 + "; " } ?? ""
            return HTTPClientError(
                lastConnectError.code, curlCode: lastConnectError.curlCode,
                detail: detail + "the request's timeout passed before a connect succeeded (\(consecutiveConnectFailures) failed in a row)")
        }
        return HTTPClientError(.timeout, detail: "the request's timeout passed while it waited for a connection")
    }

    // MARK: - Events

    /// The loop started connection `id` (after `shouldOpenConnection` said so).
    mutating func connectionStarted(_ id: UInt64, now: ContinuousClock.Instant) {
        connections.append(Connection(id: id, streamLimit: min(settings.maximumStreamsPerConnection, 100), lastHeardAt: now))
    }

    /// TCP, TLS and ALPN are done: the session is up (its SETTINGS may not have arrived).
    mutating func connectionOpened(_ id: UInt64, now: ContinuousClock.Instant) {
        update(id) {
            $0.phase = .open
            $0.lastHeardAt = now
        }
    }

    /// The server's SETTINGS: its concurrency limit, capped by ours. The origin speaks HTTP/2
    /// to us, so the backoff ends.
    mutating func settingsReceived(_ id: UInt64, maximumConcurrentStreams announced: UInt32) {
        let limit = min(settings.maximumStreamsPerConnection, Int(clamping: announced))
        update(id) {
            $0.streamLimit = limit
            $0.settingsKnown = true
        }
        consecutiveConnectFailures = 0
        nextConnectAt = nil
        lastConnectError = nil
    }

    /// GOAWAY, or the session would take no more streams: no new streams here.
    mutating func stopNewStreams(_ id: UInt64) {
        update(id) { if $0.phase == .open { $0.phase = .draining } }
    }

    /// Bytes arrived on the connection: it is alive.
    mutating func heard(_ id: UInt64, now: ContinuousClock.Instant) {
        update(id) { $0.lastHeardAt = now }
    }

    mutating func pingAnswered(_ id: UInt64) {
        update(id) { $0.pingDeadline = nil }
    }

    mutating func streamStarted(_ id: UInt64) {
        update(id) { $0.streams += 1 }
    }

    mutating func streamEnded(_ id: UInt64) {
        update(id) { $0.streams = max(0, $0.streams - 1) }
    }

    /// Connection `id` failed before it opened.
    mutating func connectFailed(_ id: UInt64, _ error: HTTPClientError, now: ContinuousClock.Instant) -> ConnectFailure {
        remove(id)
        recordFailure(error, now: now)
        // A draining connection cannot serve them either.
        return connections.allSatisfy({ $0.phase == .draining }) ? .failWaiting : .keepWaiting
    }

    /// Connection `id` closed after it opened (lost, finished, or closed by us). One that closed
    /// before its server's SETTINGS, for `error`, counts as a failed connect (the backoff), but
    /// what waits stays queued for the next attempt.
    mutating func connectionClosed(_ id: UInt64, error: HTTPClientError? = nil, now: ContinuousClock.Instant) {
        let neverUsable = connections.first(where: { $0.id == id }).map { !$0.settingsKnown } ?? false
        remove(id)
        if neverUsable, let error { recordFailure(error, now: now) }
    }

    /// The sweep's tick: PINGs to send, and PINGs that went unanswered.
    mutating func tick(now: ContinuousClock.Instant) -> [Timer] {
        var timers: [Timer] = []
        for index in connections.indices where connections[index].phase != .connecting {
            if let deadline = connections[index].pingDeadline {
                if now >= deadline { timers.append(.pingUnanswered(connection: connections[index].id)) }
            } else if connections[index].lastHeardAt.duration(to: now) >= settings.pingInterval {
                connections[index].pingDeadline = now + settings.pingTimeout
                timers.append(.sendPing(connection: connections[index].id))
            }
        }
        return timers
    }

    // MARK: - Private

    private mutating func recordFailure(_ error: HTTPClientError, now: ContinuousClock.Instant) {
        consecutiveConnectFailures += 1
        lastConnectError = error
        nextConnectAt = now + backoff(afterFailures: consecutiveConnectFailures)
    }

    /// 100 ms after the first failure, doubling, at most `maximumConnectBackoff`.
    func backoff(afterFailures failures: Int) -> Duration {
        let doublings = min(max(failures - 1, 0), 16)
        return min(settings.firstConnectBackoff * (1 << doublings), settings.maximumConnectBackoff)
    }

    private mutating func update(_ id: UInt64, _ change: (inout Connection) -> Void) {
        guard let index = connections.firstIndex(where: { $0.id == id }) else { return }
        change(&connections[index])
    }

    private mutating func remove(_ id: UInt64) {
        connections.removeAll { $0.id == id }
    }
}
