import CHapiOpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform

/// The byte stream one HTTP/2 session runs on: TLS (an OpenSSL `SSL` over the connected
/// socket: handshake, host verification, ALPN) or, for an `http://` origin (h2c), the bare
/// socket. It owns the socket from the connect to the close, and its poller interest. Kept
/// apart so the HTTP/2 layer reads and writes bytes without knowing whether they are
/// encrypted, and the TLS error mapping lives in one place. Loop thread only.
final class H2Transport {
    enum Handshake {
        /// Done; the protocol ALPN selected (nil if none).
        case done(alpn: String?)
        /// OpenSSL waits for the socket: the poller interest to set.
        case wants(UInt32)
        case failed(HTTPClientError)
    }

    enum ReadResult {
        case read(Int)
        /// Nothing more to read now.
        case wouldBlock
        /// TLS must write before it can read (a renegotiation or key update).
        case wantsWrite
        case failed(HTTPClientError)
    }

    enum WriteResult {
        case wrote(Int)
        case blocked
        case failed(HTTPClientError)
    }

    private var fd: Int32
    /// The proxy tunnel that owns `fd` (libcurl closes it), nil for a direct connection.
    private var tunnel: ProxyTunnel?
    private var ssl: OpaquePointer?
    /// The poller interest registered for `fd` (0: not registered).
    private var interest: UInt32

    init(socket: H2Connector.Socket) {
        self.fd = socket.fd
        self.tunnel = socket.tunnel
        self.interest = socket.interest
    }

    // MARK: - TLS

    /// Creates the TLS client over the socket, verifying `host` (by name, with SNI, or as an
    /// IP SAN for an address). The error if OpenSSL would not.
    func startTLS(context: OpaquePointer?, host: String, hostIsNumeric: Bool) -> HTTPClientError? {
        guard let ssl = SSL_new(context) else {
            return HTTPClientError(.tlsFailure, detail: "SSL_new failed: \(OpenSSLError.drain())")
        }
        self.ssl = ssl
        SSL_set_connect_state(ssl)
        _ = SSL_set_fd(ssl, fd)
        if hostIsNumeric {
            // No SNI for an address; the certificate must carry it as an IP SAN.
            _ = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            _ = hapi_ssl_set_sni(ssl, host)
            _ = SSL_set1_host(ssl, host)
        }
        return nil
    }

    /// One step of the TLS handshake; nil without TLS. `authority` names the origin in errors.
    func handshake(authority: String) -> Handshake? {
        guard let ssl else { return nil }
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            var protocolName: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &protocolName, &length)
            let negotiated = protocolName.map { String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self) }
            return .done(alpn: negotiated)
        }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ:
            return .wants(PlatformReadiness.readable)
        case SSL_ERROR_WANT_WRITE:
            return .wants(PlatformReadiness.writable)
        default:
            let verify = SSL_get_verify_result(ssl)
            let detail: String
            if verify != X509_V_OK {
                let text = X509_verify_cert_error_string(verify).map { String(cString: $0) } ?? "error \(verify)"
                detail = "certificate verification failed for \(authority): \(text)"
            } else {
                detail = "TLS handshake with \(authority) failed: \(OpenSSLError.drain())"
            }
            ERR_clear_error()
            return .failed(HTTPClientError(.tlsFailure, detail: detail))
        }
    }

    // MARK: - I/O

    /// Reads what the socket has into `buffer` (decrypted under TLS).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        if let ssl {
            ERR_clear_error()
            let n = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if n <= 0 {
                switch SSL_get_error(ssl, n) {
                case SSL_ERROR_WANT_READ:
                    return .wouldBlock
                case SSL_ERROR_WANT_WRITE:
                    return .wantsWrite
                case SSL_ERROR_ZERO_RETURN:
                    return .failed(HTTPClientError(.connectionLost, detail: "the server closed the connection"))
                case SSL_ERROR_SYSCALL where errno == 0 || errno == EAGAIN:
                    if errno == EAGAIN { return .wouldBlock }
                    return .failed(HTTPClientError(.connectionLost, detail: "the server closed the connection"))
                default:
                    let detail = "TLS read failed: \(OpenSSLError.drain()) (\(String(cString: strerror(errno))))"
                    return .failed(HTTPClientError(.connectionLost, detail: detail))
                }
            }
            return .read(Int(n))
        }
        let n = recv(fd, buffer.baseAddress, buffer.count, 0)
        if n < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return .wouldBlock }
            return .failed(HTTPClientError(.connectionLost, detail: "read failed: \(String(cString: strerror(errno)))"))
        }
        if n == 0 {
            return .failed(HTTPClientError(.connectionLost, detail: "the server closed the connection"))
        }
        return .read(n)
    }

    /// Writes as much of `length` bytes at `pointer` as the socket takes (one `SSL_write`
    /// under TLS).
    func write(_ pointer: UnsafeRawPointer, _ length: Int) -> WriteResult {
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

    // MARK: - Poller and teardown

    /// Sets the poller interest of the socket under `token` (adding it the first time). False
    /// if the poller refused (`errno` says why).
    func register(_ events: UInt32, token: UInt64, on poller: inout PlatformSelectorBackend) -> Bool {
        guard fd >= 0, events != interest else { return true }
        guard poller.set(fd, events: events, token: token, add: interest == 0) else { return false }
        interest = events
        return true
    }

    /// Frees the TLS state and closes the socket (the tunnel's socket by releasing the tunnel).
    /// Idempotent.
    func close(on poller: inout PlatformSelectorBackend) {
        if let ssl { SSL_free(ssl) }
        ssl = nil
        if fd >= 0 {
            if interest != 0 { poller.remove(fd) }
            if tunnel == nil { Platform.close(fd) }
        }
        tunnel = nil
        fd = -1
        interest = 0
    }
}
