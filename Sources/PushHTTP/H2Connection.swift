#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform

/// One HTTP/2 connection of the engine, as the loop (`H2Loop`) sees it: its state, its streams
/// and its clocks. Loop thread only.
///
/// Life: resolving (or tunnelling) → connecting → handshaking → open → closed. Each stage's
/// work is a layer of its own, so this type only moves between them and reports to the loop:
/// `H2Connector` gets the connected socket, `H2Transport` runs TLS (or nothing, for h2c) over
/// it, and `H2Session` is the nghttp2 session on top, whose callbacks (`H2Callbacks`) reach
/// the loop through this connection.
final class H2Connection {
    enum State {
        case resolving
        /// Asking the proxy for a tunnel (libcurl, on a tunnel thread).
        case tunnelling
        case connecting
        case handshaking
        case open
        case closed
    }

    let id: UInt64
    /// Strong: the loop may drop an origin (found not to speak HTTP/2) while another of its
    /// connections still finishes; the origin holds no connection, so there is no cycle.
    let origin: H2Origin
    unowned let loop: H2Loop
    private(set) var state: State = .resolving

    private let connector: H2Connector
    /// From the connect on: the socket, and TLS over it.
    private var transport: H2Transport?
    /// Once open: the nghttp2 session.
    private var http2: H2Session?
    /// The nghttp2 session, for the loop's reads of it (settings, a stream's user data).
    var session: OpaquePointer? { http2?.raw }

    /// Open streams by id; the table owns the exchanges. (How many it may have, whether it
    /// drains and when it is probed are its origin's pool's: `H2PoolStateMachine`.)
    var streams: [Int32: H2Exchange] = [:]

    let connectDeadline: ContinuousClock.Instant

    /// Frames waiting in nghttp2 or in the session's output buffer.
    var needsFlush = false
    /// Streams ended on this connection so far (a refill is worth trying once one has).
    var streamsEnded = 0

    init(id: UInt64, origin: H2Origin, loop: H2Loop, now: ContinuousClock.Instant) {
        self.id = id
        self.origin = origin
        self.loop = loop
        self.connector = H2Connector(token: id, origin: origin, loop: loop)
        self.connectDeadline = now + loop.settings.connectTimeout
    }

    // MARK: - Connecting

    /// Resolves (on the resolver's threads for a name) and connects.
    func start() {
        if let proxy = origin.proxy {
            state = .tunnelling
            connector.openTunnel(through: proxy, timeout: loop.now.duration(to: connectDeadline))
            return
        }
        state = .resolving
        if let addresses = connector.lookUp() { resolved(addresses) }
    }

    func resolved(_ result: Result<[SocketAddress], HTTPClientError>) {
        guard state == .resolving else { return }
        if let error = connector.adopt(result) {
            loop.connectionFailed(self, error)
            return
        }
        state = .connecting
        advance(connector.startNextAttempt())
    }

    /// The proxy's tunnel is up (or failed): TLS to the origin over it, exactly as direct.
    func tunnelled(_ result: Result<ProxyTunnel, HTTPClientError>) {
        guard state == .tunnelling else { return }
        switch result {
        case .failure(let error):
            loop.connectionFailed(self, error)
        case .success(let tunnel):
            let socket = connector.adopt(tunnel)
            state = .connecting
            connected(socket)
        }
    }

    /// The sweep's tick while connecting: the next address's turn may have come.
    func connectTimerFired(now: ContinuousClock.Instant) {
        guard state == .connecting else { return }
        advance(connector.timerFired(now: now))
    }

    private func advance(_ progress: H2Connector.Progress) {
        switch progress {
        case .waiting:
            return
        case .failed(let error):
            loop.connectionFailed(self, error)
        case .connected(let socket):
            connected(socket)
        }
    }

    private func connected(_ socket: H2Connector.Socket) {
        let transport = H2Transport(socket: socket)
        self.transport = transport
        if origin.key.isTLS {
            beginTLS(on: transport)
        } else {
            openSession()
        }
    }

    /// The socket reported readiness.
    func handle(events: UInt32) {
        switch state {
        case .resolving, .tunnelling, .closed:
            return
        case .connecting:
            advance(connector.attemptsReady())
        case .handshaking:
            handshake()
        case .open:
            if events & (PlatformReadiness.readable | PlatformReadiness.error | PlatformReadiness.hangup) != 0 {
                readAvailable()
            }
            if state == .open, events & PlatformReadiness.writable != 0 {
                needsFlush = true
            }
        }
    }

    private func beginTLS(on transport: H2Transport) {
        if let error = transport.startTLS(context: loop.settings.tls.raw, host: origin.key.host, hostIsNumeric: origin.key.hostIsNumeric) {
            loop.connectionFailed(self, error)
            return
        }
        state = .handshaking
        handshake()
    }

    private func handshake() {
        switch transport?.handshake(authority: origin.key.authority) {
        case nil:
            return
        case .done(let alpn):
            guard alpn == "h2" else {
                loop.originLacksHTTP2(self)
                return
            }
            openSession()
        case .wants(let events):
            _ = register(events)
        case .failed(let error):
            loop.connectionFailed(self, error)
        }
    }

    private func openSession() {
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let http2 = H2Session.open(callbacks: loop.callbacks, options: loop.options, context: context) else {
            loop.connectionFailed(self, HTTPClientError(.other, detail: "nghttp2_session_client_new2 failed"))
            return
        }
        self.http2 = http2
        state = .open
        _ = register(PlatformReadiness.readable)
        needsFlush = true
        loop.connectionOpened(self)
    }

    // MARK: - Requests

    /// Starts `exchange` on a new stream. False (nothing sent) if nghttp2 would not take it.
    func submit(_ exchange: H2Exchange) -> Bool {
        guard let http2 else { return false }
        let streamID = http2.submit(exchange)
        guard streamID > 0 else {
            // Stream ids exhausted or the session is going away: no new streams here.
            origin.pool.stopNewStreams(id)
            return false
        }
        exchange.streamID = streamID
        streams[streamID] = exchange
        origin.pool.streamStarted(id)
        needsFlush = true
        if streamID > Int32.max - 1024 { origin.pool.stopNewStreams(id) }  // start a fresh connection before ids run out
        return true
    }

    /// Resets a stream we no longer want (cancelled, timed out, too large).
    func reset(_ exchange: H2Exchange) {
        guard let http2, exchange.streamID > 0 else { return }
        http2.reset(exchange.streamID)
        needsFlush = true
    }

    func sendPing() {
        guard let http2 else { return }
        http2.ping()
        needsFlush = true
    }

    // MARK: - I/O

    private func readAvailable() {
        guard let http2, let transport else { return }
        let buffer = loop.readBuffer
        var heard = false
        defer { if heard { origin.pool.heard(id, now: loop.now) } }
        while state == .open {
            let count: Int
            switch transport.read(into: buffer) {
            case .read(let n):
                count = n
            case .wouldBlock:
                return
            case .wantsWrite:
                needsFlush = true
                return
            case .failed(let error):
                loop.connectionLost(self, error)
                return
            }
            heard = true
            needsFlush = true
            // Fed a slice at a time: the streams a slice ends are refilled and written before
            // the next slice is read, so the server hears new requests while we are still
            // reading its answers (all of a window's answers often come in one TLS record; read
            // whole, the two sides would take turns instead of working at once).
            var offset = 0
            while offset < count {
                let length = min(H2Loop.receiveSlice, count - offset)
                let slice = UnsafeMutableRawBufferPointer(rebasing: buffer[offset..<(offset + length)])
                offset += length
                let ended = streamsEnded
                if let error = http2.receive(slice, count: length) {
                    loop.connectionLost(self, error)
                    return
                }
                guard state == .open else { return }
                // What nghttp2 queued on its own for this slice (SETTINGS and PING ACKs,
                // WINDOW_UPDATE) goes out even when a refill below has flushed already.
                needsFlush = true
                if streamsEnded != ended, loop.refill(origin) {
                    flush()
                    guard state == .open else { return }
                }
            }
        }
    }

    /// Writes whatever nghttp2 has to send, as far as the socket takes it. Closes the
    /// connection once neither side has anything left to say (after GOAWAY).
    func flush() {
        needsFlush = false
        guard state == .open, let http2, let transport else { return }
        switch http2.flush(through: transport) {
        case .written:
            break
        case .blocked:  // the socket is full: wait for EPOLLOUT
            register(PlatformReadiness.readable | PlatformReadiness.writable)
            return
        case .failed(let error):
            loop.connectionLost(self, error)
            return
        }
        _ = register(PlatformReadiness.readable)
        if http2.isFinished || origin.pool.isDrained(id) {
            loop.connectionFinished(self)
        }
    }

    // MARK: - Poller and teardown

    /// Sets the poller interest of the socket (adding it the first time). False if the poller
    /// refused, in which case the connection has failed.
    @discardableResult
    private func register(_ events: UInt32) -> Bool {
        guard let transport else { return true }
        guard transport.register(events, token: id, on: &loop.poller) else {
            let error = HTTPClientError(.other, detail: "\(PlatformSelectorBackend.registrationCall) failed: \(String(cString: strerror(errno)))")
            if state == .open { loop.connectionLost(self, error) } else { loop.connectionFailed(self, error) }
            return false
        }
        return true
    }

    /// Shutdown: one GOAWAY, written if the socket takes it at once, errors ignored.
    func sayGoodbye() {
        guard state == .open, let http2, let transport else { return }
        http2.goodbye(through: transport)
    }

    /// Frees the session, the TLS state and the socket (or the attempts still connecting). The
    /// loop has already dealt with the streams. Idempotent.
    func close() {
        guard state != .closed else { return }
        state = .closed
        http2?.close()
        http2 = nil
        transport?.close(on: &loop.poller)
        transport = nil
        connector.close()
        streams = [:]
    }
}
