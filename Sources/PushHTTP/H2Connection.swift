import CHapiNghttp2
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform

/// One HTTP/2 connection of the engine: a non-blocking socket (`H2Connector` gets it), TLS over
/// it (`H2Transport`; none for h2c) and an nghttp2 client session driven by
/// `mem_recv`/`mem_send`. Loop thread only.
///
/// Life: resolving → connecting → handshaking → open → closed. Frames nghttp2 produces are
/// gathered into one buffer and written with as few `SSL_write`s as the socket accepts, so a
/// batch of requests becomes a handful of TLS records.
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
    unowned let origin: H2Origin
    unowned let loop: H2Loop
    private(set) var state: State = .resolving

    private let connector: H2Connector
    /// From the connect on: the socket, and TLS over it.
    private var transport: H2Transport?
    private(set) var session: OpaquePointer?

    /// Open streams by id; the table owns the exchanges.
    var streams: [Int32: H2Exchange] = [:]
    /// GOAWAY received (or stream ids exhausted): no new streams; closed once the last ends.
    var draining = false
    /// Concurrent streams allowed: ours, capped by the server's SETTINGS_MAX_CONCURRENT_STREAMS.
    var streamLimit: Int
    /// The server's first SETTINGS arrived: until then `streamLimit` is a guess (100), and the
    /// pool does not open another connection on the strength of it.
    var settingsReceived = false

    private var output: [UInt8] = []
    private var outputStart = 0

    let connectDeadline: ContinuousClock.Instant
    /// When a frame last arrived (or the connection opened): the PING clock.
    var lastFrameAt: ContinuousClock.Instant
    /// An unanswered PING's deadline.
    var pingDeadline: ContinuousClock.Instant?

    /// Frames waiting in nghttp2 or in `output`.
    var needsFlush = false

    init(id: UInt64, origin: H2Origin, loop: H2Loop, now: ContinuousClock.Instant) {
        self.id = id
        self.origin = origin
        self.loop = loop
        self.connector = H2Connector(token: id, origin: origin, loop: loop)
        self.streamLimit = min(loop.settings.maximumConcurrentStreamsPerConnection, 100)
        self.connectDeadline = now + loop.settings.connectTimeout
        self.lastFrameAt = now
    }

    /// Not yet known to be usable at full width: connecting, or open without the server's SETTINGS.
    var isEstablishing: Bool {
        switch state {
        case .resolving, .tunnelling, .connecting, .handshaking: return true
        case .open: return !settingsReceived
        case .closed: return false
        }
    }

    /// Streams start only once the server's SETTINGS are known, so its concurrency limit is
    /// never overrun (a server may refuse streams beyond it).
    var canStartStream: Bool {
        state == .open && settingsReceived && !draining && streams.count < streamLimit
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
        var session: OpaquePointer?
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let callbacks = loop.callbacks, let options = loop.options,
            nghttp2_session_client_new2(&session, callbacks, context, options) == 0, let session
        else {
            loop.connectionFailed(self, HTTPClientError(.other, detail: "nghttp2_session_client_new2 failed"))
            return
        }
        self.session = session
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: H2Loop.streamWindow),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: UInt32(H2Loop.maximumHeaderBytes)),
        ]
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        _ = nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(H2Loop.connectionWindow))
        state = .open
        lastFrameAt = loop.now
        _ = register(PlatformReadiness.readable)
        needsFlush = true
        loop.connectionOpened(self)
    }

    // MARK: - Requests

    /// Starts `exchange` on a new stream. False (nothing sent) if nghttp2 would not take it.
    func submit(_ exchange: H2Exchange) -> Bool {
        guard let session else { return false }
        let request = exchange.transfer.request
        let hasBody = !request.body.isEmpty || request.method == .post || request.method == .put || request.method == .patch
        var fields: [(String, String)] = [
            (":method", request.method.rawValue), (":scheme", request.origin.scheme),
            (":authority", request.origin.authority), (":path", request.path),
        ]
        fields.reserveCapacity(request.headers.count + 5)
        var hasContentLength = false
        for field in request.headers {
            let name = field.name.lowercased()
            // Connection-specific headers are not HTTP/2 (RFC 9113 §8.2.2); Host is :authority.
            switch name {
            case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host", "expect":
                continue
            case "te" where field.value.lowercased() != "trailers":
                continue
            case "content-length":
                hasContentLength = true
            default:
                break
            }
            fields.append((name, field.value))
        }
        if hasBody, !hasContentLength { fields.append(("content-length", String(request.body.count))) }

        // One buffer for every name and value; nghttp2 copies them during the call.
        var storage: [UInt8] = []
        storage.reserveCapacity(fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count })
        var spans: [(Int, Int, Int, Int)] = []
        spans.reserveCapacity(fields.count)
        for (name, value) in fields {
            let nameStart = storage.count
            storage.append(contentsOf: name.utf8)
            let valueStart = storage.count
            storage.append(contentsOf: value.utf8)
            spans.append((nameStart, valueStart - nameStart, valueStart, storage.count - valueStart))
        }
        let context = Unmanaged.passUnretained(exchange).toOpaque()
        let streamID: Int32 = storage.withUnsafeMutableBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress ?? UnsafeMutablePointer(bitPattern: 1) else { return -1 }
            var nva = spans.map { span in
                nghttp2_nv(
                    name: base + span.0, value: base + span.2, namelen: span.1, valuelen: span.3,
                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            if hasBody {
                var provider = nghttp2_data_provider()
                provider.source.ptr = context
                provider.read_callback = H2Callbacks.readBody
                return nghttp2_submit_request(session, nil, &nva, nva.count, &provider, context)
            }
            return nghttp2_submit_request(session, nil, &nva, nva.count, nil, context)
        }
        guard streamID > 0 else {
            // Stream ids exhausted or the session is going away: no new streams here.
            draining = true
            return false
        }
        exchange.streamID = streamID
        streams[streamID] = exchange
        needsFlush = true
        if streamID > Int32.max - 1024 { draining = true }  // start a fresh connection before ids run out
        return true
    }

    /// Resets a stream we no longer want (cancelled, timed out, too large).
    func reset(_ exchange: H2Exchange) {
        guard let session, exchange.streamID > 0 else { return }
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), exchange.streamID, NGHTTP2_CANCEL.rawValue)
        needsFlush = true
    }

    func sendPing(deadline: ContinuousClock.Instant) {
        guard let session else { return }
        _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
        pingDeadline = deadline
        needsFlush = true
    }

    // MARK: - I/O

    private func readAvailable() {
        guard let session, let transport else { return }
        let buffer = loop.readBuffer
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
            lastFrameAt = loop.now
            needsFlush = true
            let consumed = nghttp2_session_mem_recv(session, buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), count)
            if consumed < 0 {
                let text = nghttp2_strerror(Int32(consumed)).map { String(cString: $0) } ?? "error \(consumed)"
                loop.connectionLost(self, HTTPClientError(.connectionLost, detail: "HTTP/2 protocol error: \(text)"))
                return
            }
        }
    }

    /// Writes whatever nghttp2 has to send, as far as the socket takes it. Closes the
    /// connection once neither side has anything left to say (after GOAWAY).
    func flush() {
        needsFlush = false
        guard state == .open, let session, let transport else { return }
        while true {
            if outputStart < output.count {
                switch write(from: outputStart, through: transport) {
                case .wrote(let count):
                    outputStart += count
                    continue
                case .blocked:  // the socket is full: wait for EPOLLOUT
                    register(PlatformReadiness.readable | PlatformReadiness.writable)
                    return
                case .failed(let error):
                    loop.connectionLost(self, error)
                    return
                }
            }
            output.removeAll(keepingCapacity: true)
            outputStart = 0
            while output.count < H2Loop.writeChunk {
                var data: UnsafePointer<UInt8>?
                let n = nghttp2_session_mem_send(session, &data)
                if n < 0 {
                    let text = nghttp2_strerror(Int32(n)).map { String(cString: $0) } ?? "error \(n)"
                    loop.connectionLost(self, HTTPClientError(.connectionLost, detail: "HTTP/2 send failed: \(text)"))
                    return
                }
                guard n > 0, let data else { break }
                output.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
            }
            if output.isEmpty { break }
        }
        _ = register(PlatformReadiness.readable)
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            loop.connectionFinished(self)
        } else if draining && streams.isEmpty {
            loop.connectionFinished(self)
        }
    }

    /// Writes from `output[start...]`. Never touches the connection's state: the caller acts
    /// on a failure once the buffer is no longer borrowed.
    private func write(from start: Int, through transport: H2Transport) -> H2Transport.WriteResult {
        output.withUnsafeBytes { raw -> H2Transport.WriteResult in
            guard let base = raw.baseAddress else { return .wrote(0) }
            return transport.write(base + start, raw.count - start)
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
        guard state == .open, let session, let transport else { return }
        _ = nghttp2_session_terminate_session(session, UInt32(NGHTTP2_NO_ERROR.rawValue))
        output.removeAll(keepingCapacity: true)
        outputStart = 0
        while output.count < H2Loop.writeChunk {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            guard n > 0, let data else { break }
            output.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
        }
        if !output.isEmpty { _ = write(from: 0, through: transport) }
    }

    /// Frees the session, the TLS state and the socket. The loop has already dealt with the
    /// streams. Idempotent.
    func close() {
        guard state != .closed else { return }
        state = .closed
        if let session { nghttp2_session_del(session) }
        session = nil
        transport?.close(on: &loop.poller)
        transport = nil
        connector.close()
        streams = [:]
        output = []
    }
}
