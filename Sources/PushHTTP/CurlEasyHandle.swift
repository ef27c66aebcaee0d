import CHapiCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// One transfer's libcurl easy handle and everything it points to (header
/// list, request body, error buffer) plus the response as it arrives.
///
/// Loop thread only. libcurl's write and header callbacks reach this object through
/// `Unmanaged` (unretained): the loop keeps it alive in its table for as long as the handle is
/// on the multi handle, and `release()` runs `curl_easy_cleanup` before the table drops it.
final class CurlEasyHandle {
    let transfer: HTTPTransfer
    let raw: UnsafeMutableRawPointer

    private let counters: HTTPCounters
    private let maximumBodyBytes: Int
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// The request body, owned here until `release()`: libcurl reads it by pointer
    /// (`CURLOPT_POSTFIELDS`). Never empty, so the pointer is never NULL (NULL would make
    /// libcurl read the body from stdin).
    private let requestBody: UnsafeMutableRawBufferPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>

    private var responseHeaders = HTTPHeaders()
    private var responseBody: [UInt8] = []
    private var headerBytes = 0
    /// Set by a callback that aborted the transfer because the response is too large.
    private var limitExceeded = false
    private var released = false

    /// Response header bytes accepted before the transfer is aborted as too large.
    static let maximumHeaderBytes = 256 * 1024

    private init(
        raw: UnsafeMutableRawPointer, transfer: HTTPTransfer, maximumBodyBytes: Int,
        counters: HTTPCounters
    ) {
        self.raw = raw
        self.transfer = transfer
        self.maximumBodyBytes = maximumBodyBytes
        self.counters = counters
        let body = transfer.request.body
        requestBody = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, body.count), alignment: 1)
        requestBody.initializeMemory(as: UInt8.self, repeating: 0)
        requestBody.copyBytes(from: body)
        errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        counters.liveEasyHandles.add(1, ordering: .relaxed)
    }

    deinit { release() }

    /// A configured easy handle for `transfer`, not yet on the multi handle.
    static func make(
        for transfer: HTTPTransfer, timeout: Duration, settings: CurlMultiLoop.Settings,
        counters: HTTPCounters
    ) throws(HTTPClientError) -> CurlEasyHandle {
        guard let raw = curl_easy_init() else {
            throw HTTPClientError(.other, detail: "curl_easy_init failed (out of memory)")
        }
        let handle = CurlEasyHandle(
            raw: raw, transfer: transfer, maximumBodyBytes: settings.maximumResponseBodyBytes,
            counters: counters)
        do {
            try handle.configure(timeout: timeout, settings: settings)
        } catch {
            handle.release()
            throw error
        }
        return handle
    }

    /// Frees the easy handle, its header list and buffers. Idempotent. The handle must be off
    /// the multi handle (libcurl would remove it itself, but the loop always does so first).
    func release() {
        guard !released else { return }
        released = true
        curl_easy_cleanup(raw)
        curl_slist_free_all(headerList)
        headerList = nil
        requestBody.deallocate()
        errorBuffer.deinitialize(count: Int(CURL_ERROR_SIZE))
        errorBuffer.deallocate()
        counters.liveEasyHandles.subtract(1, ordering: .relaxed)
    }

    // MARK: - Options

    private func configure(timeout: Duration, settings: CurlMultiLoop.Settings) throws(HTTPClientError) {
        let request = transfer.request
        try set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        try set(CURLOPT_URL, string: request.url)
        try set(CURLOPT_PROTOCOLS_STR, string: "http,https")
        try set(CURLOPT_NOSIGNAL, 1)
        // Wait for the first connection's ALPN answer instead of opening one per request.
        try set(CURLOPT_PIPEWAIT, 1)
        try set(CURLOPT_TCP_KEEPALIVE, 1)
        if request.addressPolicy == .publicOnly {
            // libcurl reuses a cached connection without opening a socket, so the check below
            // would never see a connection a `.any` request opened to a private address, and
            // no option keeps libcurl's cache apart by policy (an identity CONNECT_TO is
            // dropped as a no-op). So a `.publicOnly` transfer always opens its own connection
            // and closes it after: the HTTP/1.1 Web Push services pay a handshake per push
            // (those that speak HTTP/2 are the HTTP/2 engine's, pooled per policy).
            try set(CURLOPT_FRESH_CONNECT, 1)
            try set(CURLOPT_FORBID_REUSE, 1)
            // libcurl resolves on its own: judge each address right before its socket is made.
            try check(
                hapi_curl_easy_setopt_opensocket(raw) { _, _, address in
                    // `addr` is followed by the rest of the address (libcurl's storage holds
                    // `addrlen` bytes from there).
                    guard let address, let offset = MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr) else { return hapi_curl_socket_bad() }
                    let bytes = Array(UnsafeRawBufferPointer(start: UnsafeRawPointer(address).advanced(by: offset), count: Int(address.pointee.addrlen)))
                    guard EndpointAddressPolicy.refusal(sockaddr: bytes) == nil else { return hapi_curl_socket_bad() }
                    return socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
                }, "CURLOPT_OPENSOCKETFUNCTION")
        }
        try set(CURLOPT_TIMEOUT_MS, timeout.curlMilliseconds)
        try set(CURLOPT_CONNECTTIMEOUT_MS, settings.connectTimeout.curlMilliseconds)
        // h2c never comes here (the HTTP/2 engine serves it); an https origin lands here only
        // once its ALPN chose HTTP/1.1, but libcurl may still find h2 on a later connection.
        let version = transfer.isHTTPS ? Int(CURL_HTTP_VERSION_2TLS) : Int(CURL_HTTP_VERSION_1_1)
        try set(CURLOPT_HTTP_VERSION, version)
        // Stop before reading a body whose announced length is already too large (not for HEAD,
        // whose content-length describes a body that never comes).
        if transfer.request.method != .head {
            try check(
                hapi_curl_easy_setopt_off_t(
                    raw, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(settings.maximumResponseBodyBytes)),
                "CURLOPT_MAXFILESIZE_LARGE")
        }
        if let trustStore = settings.trustStore {
            try check(trustStore.apply(to: raw), "CURLOPT_CAINFO_BLOB")
            if transfer.proxy?.isTLS == true { try check(trustStore.apply(to: raw, option: CURLOPT_PROXY_CAINFO_BLOB), "CURLOPT_PROXY_CAINFO_BLOB") }
        }
        guard ProxyTunnel.configure(raw, for: transfer.proxy) else {
            throw HTTPClientError(.invalidConfiguration, detail: "libcurl refused the proxy options")
        }

        let context = Unmanaged.passUnretained(self).toOpaque()
        try check(
            hapi_curl_easy_setopt_data_callback(raw, CURLOPT_WRITEFUNCTION) { data, size, count, context in
                guard let context else { return 0 }
                let handle = Unmanaged<CurlEasyHandle>.fromOpaque(context).takeUnretainedValue()
                return handle.receiveBody(data, size: size, count: count)
            }, "CURLOPT_WRITEFUNCTION")
        try set(CURLOPT_WRITEDATA, pointer: context)
        try check(
            hapi_curl_easy_setopt_data_callback(raw, CURLOPT_HEADERFUNCTION) { data, size, count, context in
                guard let context else { return 0 }
                let handle = Unmanaged<CurlEasyHandle>.fromOpaque(context).takeUnretainedValue()
                return handle.receiveHeader(data, size: size, count: count)
            }, "CURLOPT_HEADERFUNCTION")
        try set(CURLOPT_HEADERDATA, pointer: context)

        try configureMethodAndBody(request)
        try configureHeaders(request)
    }

    private func configureMethodAndBody(_ request: HTTPClientRequest) throws(HTTPClientError) {
        let method = request.method
        if method == .head {
            try set(CURLOPT_NOBODY, 1)
            return
        }
        let sendsBody = !request.body.isEmpty || method == .post || method == .put || method == .patch
        if sendsBody {
            try check(
                hapi_curl_easy_setopt_off_t(raw, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count)),
                "CURLOPT_POSTFIELDSIZE_LARGE")
            try set(CURLOPT_POSTFIELDS, pointer: requestBody.baseAddress)
        } else {
            try set(CURLOPT_HTTPGET, 1)
        }
        if method != .post && !(method == .get && !sendsBody) {
            try set(CURLOPT_CUSTOMREQUEST, string: method.rawValue)
        }
    }

    private func configureHeaders(_ request: HTTPClientRequest) throws(HTTPClientError) {
        var lines: [String] = []
        for field in request.headers {
            // "Name:" would tell libcurl to remove the header; "Name;" sends it empty.
            lines.append(field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)")
        }
        // Never wait for 100-continue: one round trip saved, and HTTP/2 has no use for it.
        if !request.headers.contains(name: "expect") { lines.append("Expect:") }
        // libcurl would label a POST body form-urlencoded; say nothing rather than the wrong thing.
        if !request.headers.contains(name: "content-type") { lines.append("Content-Type:") }
        for line in lines {
            guard let appended = curl_slist_append(headerList, line) else {
                throw HTTPClientError(.other, detail: "curl_slist_append failed (out of memory)")
            }
            headerList = appended
        }
        try check(hapi_curl_easy_setopt_slist(raw, CURLOPT_HTTPHEADER, headerList), "CURLOPT_HTTPHEADER")
    }

    private func set(_ option: CURLoption, _ value: Int) throws(HTTPClientError) {
        try check(hapi_curl_easy_setopt_long(raw, option, value), "option \(option.rawValue)")
    }

    private func set(_ option: CURLoption, string: String) throws(HTTPClientError) {
        // libcurl copies string options.
        try check(hapi_curl_easy_setopt_string(raw, option, string), "option \(option.rawValue)")
    }

    private func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) throws(HTTPClientError) {
        try check(hapi_curl_easy_setopt_ptr(raw, option, pointer), "option \(option.rawValue)")
    }

    private func check(_ code: CURLcode, _ what: String) throws(HTTPClientError) {
        guard code != CURLE_OK else { return }
        let kind: HTTPClientError.Code =
            switch code {
            case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL, CURLE_BAD_FUNCTION_ARGUMENT: .invalidRequest
            case CURLE_UNKNOWN_OPTION, CURLE_NOT_BUILT_IN: .invalidConfiguration
            default: .other
            }
        throw HTTPClientError(kind, curlCode: Int(code.rawValue), detail: "setting \(what): \(Self.text(of: code))")
    }

    // MARK: - Callbacks (inside curl_multi_perform, on the loop thread)

    private func receiveBody(_ data: UnsafeMutablePointer<CChar>?, size: Int, count: Int) -> Int {
        let (total, overflow) = size.multipliedReportingOverflow(by: count)
        guard !overflow else { return 0 }
        guard total > 0 else { return 0 }
        guard let data else { return 0 }
        guard total <= maximumBodyBytes - responseBody.count else {
            limitExceeded = true
            return 0  // != total: libcurl aborts with CURLE_WRITE_ERROR
        }
        responseBody.append(contentsOf: UnsafeRawBufferPointer(start: data, count: total))
        return total
    }

    private func receiveHeader(_ data: UnsafeMutablePointer<CChar>?, size: Int, count: Int) -> Int {
        let (total, overflow) = size.multipliedReportingOverflow(by: count)
        guard !overflow, let data else { return 0 }
        headerBytes += total
        guard headerBytes <= Self.maximumHeaderBytes else {
            limitExceeded = true
            return 0
        }
        let line = UnsafeRawBufferPointer(start: data, count: total)
        var end = line.count
        while end > 0, line[end - 1] == 0x0A || line[end - 1] == 0x0D { end -= 1 }
        guard end > 0 else { return total }  // the blank line that ends a header block
        let bytes = line[0..<end]
        if bytes.starts(with: "HTTP/".utf8) {
            // A status line starts a new response (after a 1xx): forget earlier headers.
            responseHeaders = HTTPHeaders()
            return total
        }
        guard let colon = bytes.firstIndex(of: 0x3A), colon > 0 else { return total }  // obs-fold or junk
        let name = String(decoding: bytes[..<colon].map(HTTPHeaders.asciiLowercase), as: UTF8.self)
        var valueBytes = bytes[(colon + 1)...]
        while let first = valueBytes.first, first == 0x20 || first == 0x09 { valueBytes.removeFirst() }
        while let last = valueBytes.last, last == 0x20 || last == 0x09 { valueBytes.removeLast() }
        let value = String(decoding: valueBytes, as: UTF8.self)
        // (A HEAD response's content-length describes a body that never comes.)
        if name == "content-length", transfer.request.method != .head, let length = Int(value),
            length > maximumBodyBytes
        {
            limitExceeded = true
            return 0
        }
        responseHeaders.add(name: name, value: value)
        return total
    }

    // MARK: - Result

    /// What the attempt produced, once libcurl reported `code` for it.
    func outcome(_ code: CURLcode) -> Result<HTTPResponse, HTTPClientError> {
        guard code == CURLE_OK else { return .failure(error(for: code)) }
        var status = 0
        _ = hapi_curl_easy_getinfo_long(raw, CURLINFO_RESPONSE_CODE, &status)
        var version = 0
        _ = hapi_curl_easy_getinfo_long(raw, CURLINFO_HTTP_VERSION, &version)
        let httpVersion: HTTPResponse.Version =
            switch version {
            case Int(CURL_HTTP_VERSION_1_0): .http1_0
            case Int(CURL_HTTP_VERSION_2_0): .http2
            case Int(CURL_HTTP_VERSION_3): .http3
            default: .http1_1
            }
        return .success(
            HTTPResponse(status: status, headers: responseHeaders, body: responseBody, httpVersion: httpVersion))
    }

    /// The failed attempt as a typed error. Its detail is `curl_easy_strerror`, then libcurl's
    /// error buffer, which names hosts and ports, never request headers or bodies.
    func error(for code: CURLcode) -> HTTPClientError {
        if let proxy = transfer.proxy {
            var status = 0
            _ = hapi_curl_easy_getinfo_long(raw, CURLINFO_HTTP_CONNECTCODE, &status)
            if let refusal = ProxyTunnel.proxyAnswer(status: status, proxy: proxy) { return refusal }
        }
        let buffer = String(cString: errorBuffer)
        let summary = Self.text(of: code)
        let text = buffer.isEmpty || buffer == summary ? summary : "\(summary) (\(buffer))"
        let kind = Self.classify(
            code, message: buffer, limitExceeded: limitExceeded, receivedNothing: headerBytes == 0 && responseBody.isEmpty)
        return HTTPClientError(kind, curlCode: Int(code.rawValue), detail: text)
    }

    static func text(of code: CURLcode) -> String {
        guard let text = curl_easy_strerror(code) else { return "unknown error" }
        return String(cString: text)
    }

    /// Maps libcurl's result to what happened.
    ///
    /// Refused streams, as libcurl 7.88 reports them:
    /// - RST_STREAM(REFUSED_STREAM): libcurl retries on a fresh connection by itself (up to 5
    ///   times), and only then fails with CURLE_RECV_ERROR "Connection died, tried 5 times" —
    ///   reported as `connectionLost`, since the same message covers reused connections that
    ///   died after sending. `CURLE_HTTP2_STREAM` naming REFUSED_STREAM is a refusal.
    /// - GOAWAY whose last-stream-id is below the request's stream: libcurl does not retry; the
    ///   session has nothing left to do and it fails with CURLE_HTTP2 and an empty error buffer,
    ///   before any response byte. That combination is a refusal. (A stream the GOAWAY still
    ///   covers stays open and either completes or fails with another code and a message.)
    static func classify(
        _ code: CURLcode, message: String, limitExceeded: Bool, receivedNothing: Bool
    ) -> HTTPClientError.Code {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .dnsFailure
        case CURLE_COULDNT_CONNECT:
            return .connectionRefused
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
            CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_USE_SSL_FAILED, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CRL_BADFILE,
            CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
            CURLE_SSL_CLIENTCERT:
            return .tlsFailure
        case CURLE_FILESIZE_EXCEEDED:
            return .responseTooLarge
        case CURLE_WRITE_ERROR where limitExceeded:
            return .responseTooLarge
        case CURLE_HTTP2_STREAM where message.contains("REFUSED_STREAM"):
            return .streamRefused
        case CURLE_HTTP2 where message.isEmpty && receivedNothing:
            return .streamRefused
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_HTTP2,
            CURLE_HTTP2_STREAM, CURLE_HTTP3:
            return .connectionLost
        // The URL was validated before the transfer began, so an unsupported protocol now is
        // the answer's: libcurl reports a reply without a status line as HTTP/0.9 this way.
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_CONTENT_ENCODING:
            return .badResponse
        case CURLE_URL_MALFORMAT:
            return .invalidRequest
        default:
            return .other
        }
    }
}
