import CHapiNghttp2
import CHapiOpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform

/// One HTTP/2 connection of the engine: a non-blocking socket (`H2Connector` gets it), the TLS
/// session over it (none for h2c) and an nghttp2 client session driven by
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
    private var fd: Int32 = -1
    private var ssl: OpaquePointer?
    private(set) var session: OpaquePointer?
    /// The proxy tunnel that owns `fd` (libcurl closes it), nil for a direct connection.
    private var tunnel: ProxyTunnel?
    /// The poller interest registered for `fd` (0: not registered).
    private var interest: UInt32 = 0

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
        fd = socket.fd
        tunnel = socket.tunnel
        interest = socket.interest
        if origin.key.isTLS {
            beginTLS()
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

    private func beginTLS() {
        guard let ssl = SSL_new(loop.settings.tls.raw) else {
            loop.connectionFailed(self, HTTPClientError(.tlsFailure, detail: "SSL_new failed: \(OpenSSLError.drain())"))
            return
        }
        self.ssl = ssl
        SSL_set_connect_state(ssl)
        _ = SSL_set_fd(ssl, fd)
        let host = origin.key.host
        if origin.key.hostIsNumeric {
            // No SNI for an address; the certificate must carry it as an IP SAN.
            _ = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            _ = hapi_ssl_set_sni(ssl, host)
            _ = SSL_set1_host(ssl, host)
        }
        state = .handshaking
        handshake()
    }

    private func handshake() {
        guard let ssl else { return }
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            var protocolName: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &protocolName, &length)
            let negotiated = protocolName.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) }
            guard negotiated == "h2" else {
                loop.originLacksHTTP2(self)
                return
            }
            openSession()
            return
        }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ:
            _ = register(PlatformReadiness.readable)
        case SSL_ERROR_WANT_WRITE:
            _ = register(PlatformReadiness.writable)
        default:
            let verify = SSL_get_verify_result(ssl)
            let detail: String
            if verify != X509_V_OK {
                let text = X509_verify_cert_error_string(verify).map { String(cString: $0) } ?? "error \(verify)"
                detail = "certificate verification failed for \(origin.key.authority): \(text)"
            } else {
                detail = "TLS handshake with \(origin.key.authority) failed: \(OpenSSLError.drain())"
            }
            ERR_clear_error()
            loop.connectionFailed(self, HTTPClientError(.tlsFailure, detail: detail))
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
        guard let session else { return }
        let buffer = loop.readBuffer
        while state == .open {
            let count: Int
            if let ssl {
                ERR_clear_error()
                let n = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
                if n <= 0 {
                    switch SSL_get_error(ssl, n) {
                    case SSL_ERROR_WANT_READ:
                        return
                    case SSL_ERROR_WANT_WRITE:
                        needsFlush = true
                        return
                    case SSL_ERROR_ZERO_RETURN:
                        loop.connectionLost(self, HTTPClientError(.connectionLost, detail: "the server closed the connection"))
                        return
                    case SSL_ERROR_SYSCALL where errno == 0 || errno == EAGAIN:
                        if errno == EAGAIN { return }
                        loop.connectionLost(self, HTTPClientError(.connectionLost, detail: "the server closed the connection"))
                        return
                    default:
                        let detail = "TLS read failed: \(OpenSSLError.drain()) (\(String(cString: strerror(errno))))"
                        loop.connectionLost(self, HTTPClientError(.connectionLost, detail: detail))
                        return
                    }
                }
                count = Int(n)
            } else {
                let n = recv(fd, buffer.baseAddress, buffer.count, 0)
                if n < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
                    loop.connectionLost(self, HTTPClientError(.connectionLost, detail: "read failed: \(String(cString: strerror(errno)))"))
                    return
                }
                if n == 0 {
                    loop.connectionLost(self, HTTPClientError(.connectionLost, detail: "the server closed the connection"))
                    return
                }
                count = n
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
        guard state == .open, let session else { return }
        while true {
            if outputStart < output.count {
                switch write(from: outputStart) {
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

    private enum WriteResult {
        case wrote(Int)
        case blocked
        case failed(HTTPClientError)
    }

    /// Writes from `output[start...]`. Never touches the connection's state: the caller acts
    /// on a failure once the buffer is no longer borrowed.
    private func write(from start: Int) -> WriteResult {
        output.withUnsafeBytes { raw -> WriteResult in
            guard let base = raw.baseAddress else { return .wrote(0) }
            let pointer = base + start
            let length = raw.count - start
            if let ssl {
                ERR_clear_error()
                let n = SSL_write(ssl, pointer, Int32(clamping: length))
                if n > 0 { return .wrote(Int(n)) }
                switch SSL_get_error(ssl, n) {
                case SSL_ERROR_WANT_WRITE, SSL_ERROR_WANT_READ:
                    return .blocked
                default:
                    let detail = "TLS write failed: \(OpenSSLError.drain()) (\(String(cString: strerror(errno))))"
                    return .failed(HTTPClientError(.connectionLost, detail: detail))
                }
            }
            let n = Platform.send(fd, pointer, length)
            if n >= 0 { return .wrote(n) }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return .blocked }
            return .failed(HTTPClientError(.connectionLost, detail: "write failed: \(String(cString: strerror(errno)))"))
        }
    }

    // MARK: - Poller and teardown

    /// Sets the poller interest of the socket (adding it the first time). False if the poller
    /// refused, in which case the connection has failed.
    @discardableResult
    private func register(_ events: UInt32) -> Bool {
        guard fd >= 0, events != interest else { return true }
        guard loop.poller.set(fd, events: events, token: id, add: interest == 0) else {
            let error = HTTPClientError(.other, detail: "\(PlatformSelectorBackend.registrationCall) failed: \(String(cString: strerror(errno)))")
            if state == .open { loop.connectionLost(self, error) } else { loop.connectionFailed(self, error) }
            return false
        }
        interest = events
        return true
    }

    private func unregisterAndClose() {
        connector.close()
        if fd >= 0 {
            if interest != 0 { loop.poller.remove(fd) }
            if tunnel == nil { Platform.close(fd) }
        }
        tunnel = nil
        fd = -1
        interest = 0
    }

    /// Shutdown: one GOAWAY, written if the socket takes it at once, errors ignored.
    func sayGoodbye() {
        guard state == .open, let session else { return }
        _ = nghttp2_session_terminate_session(session, UInt32(NGHTTP2_NO_ERROR.rawValue))
        output.removeAll(keepingCapacity: true)
        outputStart = 0
        while output.count < H2Loop.writeChunk {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            guard n > 0, let data else { break }
            output.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
        }
        if !output.isEmpty { _ = write(from: 0) }
    }

    /// Frees the session, the TLS state and the socket. The loop has already dealt with the
    /// streams. Idempotent.
    func close() {
        guard state != .closed else { return }
        state = .closed
        if let session { nghttp2_session_del(session) }
        session = nil
        if let ssl { SSL_free(ssl) }
        ssl = nil
        unregisterAndClose()
        streams = [:]
        output = []
    }
}
