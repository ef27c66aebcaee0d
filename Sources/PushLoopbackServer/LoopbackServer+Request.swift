import CHapiLoopback

extension LoopbackServer {
    /// One header field. Names are lowercase for HTTP/2 and lowercased for HTTP/1.1.
    public struct Header: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// A complete request as the server received it.
    public struct Request: Sendable {
        /// 1, 2, 3... per accepted connection.
        public var connectionID: UInt64
        /// The HTTP/2 stream id; 0 for HTTP/1.1.
        public var streamID: Int32
        /// 2 or 1.
        public var httpVersion: Int
        public var method: String
        public var path: String
        /// `:authority`, or the Host header for HTTP/1.1.
        public var authority: String?
        /// All fields in arrival order, pseudo-headers (`:method`, `:path`, ...) included.
        public var headers: [Header]
        public var body: [UInt8]

        public init(
            connectionID: UInt64 = 1, streamID: Int32 = 1, httpVersion: Int = 2, headers: [Header],
            body: [UInt8] = []
        ) {
            self.connectionID = connectionID
            self.streamID = streamID
            self.httpVersion = httpVersion
            self.headers = headers
            self.body = body
            method = ""
            path = ""
            authority = nil
            method = header(":method") ?? ""
            path = header(":path") ?? ""
            authority = header(":authority")
        }

        /// The first field with this name, compared case-insensitively.
        public func header(_ name: String) -> String? {
            let wanted = name.lowercased()
            return headers.first { $0.name.lowercased() == wanted }?.value
        }

        /// The body decoded as UTF-8 (invalid sequences replaced).
        public var bodyString: String { String(decoding: body, as: UTF8.self) }
    }

    /// What the server does with a request.
    public enum Action: Sendable, Hashable {
        /// Status, headers and body (after ``Response/delayMilliseconds``).
        case respond
        /// RST_STREAM with this code instead of answering (7 = REFUSED_STREAM, 2 = INTERNAL_ERROR).
        /// HTTP/1.1: the connection is closed.
        case resetStream(errorCode: UInt32 = 7)
        /// GOAWAY refusing this stream and later ones, then close once flushed. HTTP/1.1: close.
        case goaway(errorCode: UInt32 = 0)
        /// Close the TCP connection at once, without a frame.
        case dropConnection
        /// Keep the stream open forever (for client timeouts).
        case neverRespond
        /// Status, headers and the first `bytes` of the body, then close the connection.
        case partialThenDrop(bytes: Int)
        /// Status, headers, then the body (or "x") repeated until the client gives up.
        case endlessBody
        /// Answer normally, then never read or write the connection again while keeping it
        /// open: a peer that hung (HTTP/2 only), for PING liveness checks.
        case respondThenSilent
    }

    public struct Response: Sendable {
        public var status: Int
        public var headers: [Header]
        public var body: [UInt8]
        /// Applied by a timer on the server thread, for every action.
        public var delayMilliseconds: UInt32
        public var action: Action

        public init(
            status: Int = 200, headers: [Header] = [], body: [UInt8] = [],
            delayMilliseconds: UInt32 = 0, action: Action = .respond
        ) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delayMilliseconds = delayMilliseconds
            self.action = action
        }

        /// `content-type: application/json` with the string as body.
        public static func json(status: Int = 200, _ json: String) -> Response {
            Response(
                status: status, headers: [Header(name: "content-type", value: "application/json")],
                body: Array(json.utf8))
        }

        /// `content-type: text/plain; charset=utf-8` with the string as body.
        public static func text(status: Int = 200, _ text: String) -> Response {
            Response(
                status: status,
                headers: [Header(name: "content-type", value: "text/plain; charset=utf-8")],
                body: Array(text.utf8))
        }

        /// A fault or non-answer: `.action(.resetStream())`, `.action(.neverRespond)`...
        public static func action(_ action: Action, delayMilliseconds: UInt32 = 0) -> Response {
            Response(delayMilliseconds: delayMilliseconds, action: action)
        }

        /// This response with one more header.
        public func adding(header name: String, _ value: String) -> Response {
            var copy = self
            copy.headers.append(Header(name: name, value: value))
            return copy
        }

        /// This response, performed after a delay.
        public func delayed(milliseconds: UInt32) -> Response {
            var copy = self
            copy.delayMilliseconds = milliseconds
            return copy
        }
    }
}

// MARK: - C conversions (server thread only)

extension LoopbackServer.Request {
    init(_ request: hapi_lb_request) {
        var headers: [LoopbackServer.Header] = []
        if let fields = request.headers {
            headers.reserveCapacity(request.header_count)
            for field in UnsafeBufferPointer(start: fields, count: request.header_count) {
                headers.append(
                    LoopbackServer.Header(
                        name: decodeUTF8(field.name, field.name_len),
                        value: decodeUTF8(field.value, field.value_len)))
            }
        }
        let body = request.body.map { Array(UnsafeBufferPointer(start: $0, count: request.body_len)) } ?? []
        self.init(
            connectionID: request.connection_id, streamID: request.stream_id,
            httpVersion: Int(request.http_version), headers: headers, body: body)
    }
}

extension LoopbackServer.Response {
    /// Copies this response into the server-owned C response.
    func fill(_ response: OpaquePointer) {
        switch action {
        case .respond:
            hapi_lb_response_set_action(response, HAPI_LB_RESPOND)
        case .resetStream(let code):
            hapi_lb_response_set_action(response, HAPI_LB_RESET_STREAM)
            hapi_lb_response_set_error_code(response, code)
        case .goaway(let code):
            hapi_lb_response_set_action(response, HAPI_LB_GOAWAY)
            hapi_lb_response_set_error_code(response, code)
        case .dropConnection:
            hapi_lb_response_set_action(response, HAPI_LB_DROP_CONNECTION)
        case .neverRespond:
            hapi_lb_response_set_action(response, HAPI_LB_NEVER_RESPOND)
        case .partialThenDrop(let bytes):
            hapi_lb_response_set_action(response, HAPI_LB_PARTIAL_THEN_DROP)
            hapi_lb_response_set_partial_bytes(response, max(0, bytes))
        case .endlessBody:
            hapi_lb_response_set_action(response, HAPI_LB_ENDLESS_BODY)
        case .respondThenSilent:
            hapi_lb_response_set_action(response, HAPI_LB_RESPOND_THEN_SILENT)
        }
        hapi_lb_response_set_status(response, Int32(clamping: status))
        hapi_lb_response_set_delay_ms(response, delayMilliseconds)
        for header in headers {
            header.name.withCString { name in
                header.value.withCString { value in
                    hapi_lb_response_add_header(
                        response, name, header.name.utf8.count, value, header.value.utf8.count)
                }
            }
        }
        body.withUnsafeBufferPointer { bytes in
            hapi_lb_response_set_body(response, bytes.baseAddress, bytes.count)
        }
    }
}

private func decodeUTF8(_ pointer: UnsafePointer<CChar>?, _ count: Int) -> String {
    guard let pointer else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: pointer, count: count), as: UTF8.self)
}
