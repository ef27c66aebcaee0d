import CHapiNghttp2

/// One connection's nghttp2 client session, driven by `mem_recv`/`mem_send` over an
/// `H2Transport`: our SETTINGS, request streams, RST_STREAM, PING, GOAWAY, and the frames read.
/// Kept apart from the bytes' transport and from the connection's state machine so what is
/// HTTP/2 reads as such. Frames nghttp2 produces are gathered into one buffer and written with
/// as few writes as the socket accepts, so a batch of requests becomes a handful of TLS
/// records. Loop thread only.
final class H2Session {
    enum FlushResult {
        /// Everything nghttp2 had is written.
        case written
        /// The socket is full: wait until it is writable.
        case blocked
        case failed(HTTPClientError)
    }

    /// The nghttp2 session; its user data is the connection (`H2Callbacks`).
    let raw: OpaquePointer
    private var output: [UInt8] = []
    private var outputStart = 0

    private init(raw: OpaquePointer) {
        self.raw = raw
    }

    /// A client session calling `callbacks` with `context` as user data, our SETTINGS and
    /// connection window queued. Nil if nghttp2 would not create it.
    static func open(callbacks: OpaquePointer?, options: OpaquePointer?, context: UnsafeMutableRawPointer) -> H2Session? {
        var session: OpaquePointer?
        guard let callbacks, let options, nghttp2_session_client_new2(&session, callbacks, context, options) == 0, let session else {
            return nil
        }
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: H2Loop.streamWindow),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: UInt32(H2Loop.maximumHeaderBytes)),
        ]
        _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        _ = nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Int32(H2Loop.connectionWindow))
        return H2Session(raw: session)
    }

    // MARK: - Streams

    /// Submits `exchange`'s request on a new stream: its id, or a value ≤ 0 if nghttp2 would
    /// not take it (nothing sent).
    func submit(_ exchange: H2Exchange) -> Int32 {
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
        let session = raw
        let context = Unmanaged.passUnretained(exchange).toOpaque()
        return storage.withUnsafeMutableBufferPointer { buffer -> Int32 in
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
    }

    /// Queues RST_STREAM(CANCEL) for `streamID`.
    func reset(_ streamID: Int32) {
        _ = nghttp2_submit_rst_stream(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
    }

    /// Queues a PING.
    func ping() {
        _ = nghttp2_submit_ping(raw, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
    }

    /// Neither side has anything left to say (after GOAWAY).
    var isFinished: Bool {
        nghttp2_session_want_read(raw) == 0 && nghttp2_session_want_write(raw) == 0
    }

    // MARK: - I/O

    /// Feeds `count` bytes read into `buffer` to nghttp2 (its callbacks run meanwhile). The
    /// error if they broke the protocol.
    func receive(_ buffer: UnsafeMutableRawBufferPointer, count: Int) -> HTTPClientError? {
        let consumed = nghttp2_session_mem_recv(raw, buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), count)
        if consumed < 0 {
            let text = nghttp2_strerror(Int32(consumed)).map { String(cString: $0) } ?? "error \(consumed)"
            return HTTPClientError(.connectionLost, detail: "HTTP/2 protocol error: \(text)")
        }
        return nil
    }

    /// Writes whatever nghttp2 has to send, as far as `transport` takes it.
    func flush(through transport: H2Transport) -> FlushResult {
        while true {
            if outputStart < output.count {
                switch write(from: outputStart, through: transport) {
                case .wrote(let count):
                    outputStart += count
                    continue
                case .blocked:
                    return .blocked
                case .failed(let error):
                    return .failed(error)
                }
            }
            output.removeAll(keepingCapacity: true)
            outputStart = 0
            while output.count < H2Loop.writeChunk {
                var data: UnsafePointer<UInt8>?
                let n = nghttp2_session_mem_send(raw, &data)
                if n < 0 {
                    let text = nghttp2_strerror(Int32(n)).map { String(cString: $0) } ?? "error \(n)"
                    return .failed(HTTPClientError(.connectionLost, detail: "HTTP/2 send failed: \(text)"))
                }
                guard n > 0, let data else { break }
                output.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
            }
            if output.isEmpty { return .written }
        }
    }

    /// Queues GOAWAY(NO_ERROR) and writes it if the socket takes it at once, errors ignored.
    func goodbye(through transport: H2Transport) {
        _ = nghttp2_session_terminate_session(raw, UInt32(NGHTTP2_NO_ERROR.rawValue))
        output.removeAll(keepingCapacity: true)
        outputStart = 0
        while output.count < H2Loop.writeChunk {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(raw, &data)
            guard n > 0, let data else { break }
            output.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
        }
        if !output.isEmpty { _ = write(from: 0, through: transport) }
    }

    /// Writes from `output[start...]`. Only the buffer is borrowed meanwhile: the caller acts
    /// on a failure once it is no longer.
    private func write(from start: Int, through transport: H2Transport) -> H2Transport.WriteResult {
        output.withUnsafeBytes { bytes -> H2Transport.WriteResult in
            guard let base = bytes.baseAddress else { return .wrote(0) }
            return transport.write(base + start, bytes.count - start)
        }
    }

    /// Frees the session (and what it still buffers). Call once.
    func close() {
        nghttp2_session_del(raw)
        output = []
    }
}
