import CHapiOpenSSL
import CHapiRedis
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform

/// The client side of `rediss://`: TLS 1.2 or later, the peer always verified against the
/// system trust store plus the operator's extra CA, its name checked (or its address, for an
/// IP literal). Made once per limiter, on the limiter's thread (it reads certificate files).
final class RedisTLSContext {
    let raw: OpaquePointer

    init(caFile: String?, caFileVariable: String) throws(RedisLinkError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            throw RedisLinkError(.unavailable, "cannot make a TLS context: \(RedisTLSLink.drainErrors())")
        }
        raw = ctx
        guard hapi_ssl_ctx_set_min_tls12(ctx) == 1 else {
            throw RedisLinkError(.refused, "cannot require TLS 1.2: \(RedisTLSLink.drainErrors())")
        }
        _ = hapi_ssl_ctx_set_client_modes(ctx)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        // The system store (Debian: /etc/ssl/certs and its bundle); a missing one only means
        // fewer roots, never verification off.
        if SSL_CTX_set_default_verify_paths(ctx) != 1 { ERR_clear_error() }
        if let caFile {
            guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else {
                ERR_clear_error()
                throw RedisLinkError(.refused, "\(caFileVariable) (\(caFile)) holds no usable PEM certificate")
            }
        }
    }

    deinit { SSL_CTX_free(raw) }
}

/// `rediss://` on Debian's hiredis 0.14, which has no TLS: our own non-blocking socket and
/// OpenSSL session, with hiredis encoding the commands (`redisFormatCommandArgv`) and parsing
/// the replies (`redisReader`), so no RESP is written by hand. Every wait is a `poll` bounded
/// by the connect timeout (connect, handshake) or the command timeout (each read or write that
/// makes no progress).
final class RedisTLSLink: RedisLink {
    /// What a peer may make the reply parser hold before it is cut off (our replies are tiny).
    static let maximumBufferedBytes = 1 << 20

    private let fd: Int32
    private let ssl: OpaquePointer
    private let reader: UnsafeMutablePointer<redisReader>
    private let commandMilliseconds: Int32
    private var closed = false

    private init(fd: Int32, ssl: OpaquePointer, reader: UnsafeMutablePointer<redisReader>, commandMilliseconds: Int32) {
        self.fd = fd
        self.ssl = ssl
        self.reader = reader
        self.commandMilliseconds = commandMilliseconds
    }

    static func connect(
        host: String, port: Int, context: RedisTLSContext, connectTimeout: Duration, commandTimeout: Duration
    ) throws(RedisLinkError) -> RedisTLSLink {
        let connectMilliseconds = max(1, Int(connectTimeout.wholeMilliseconds))
        let deadline = monotonicMilliseconds() + Int64(connectMilliseconds)
        let fd = try openSocket(host: host, port: port, deadline: deadline, timeoutMilliseconds: connectMilliseconds)
        guard let ssl = SSL_new(context.raw) else {
            Platform.close(fd)
            throw RedisLinkError(.unavailable, "cannot make a TLS session: \(drainErrors())")
        }
        func abandon() {
            SSL_free(ssl)
            Platform.close(fd)
        }
        _ = SSL_set_fd(ssl, fd)
        SSL_set_connect_state(ssl)
        if PushRelayRedisConfiguration.isNumericHost(host) {
            // No SNI for an address; the certificate must carry it as an IP SAN.
            _ = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            _ = hapi_ssl_set_sni(ssl, host)
            _ = SSL_set1_host(ssl, host)
        }
        while true {
            ERR_clear_error()
            let rc = SSL_connect(ssl)
            if rc == 1 { break }
            let code = SSL_get_error(ssl, rc)
            if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE {
                let events = Int16(code == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT)
                guard wait(fd, events: events, until: deadline) else {
                    abandon()
                    throw RedisLinkError(.unavailable, "no TLS handshake within \(connectMilliseconds) ms")
                }
                continue
            }
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                let text = X509_verify_cert_error_string(verify).map { String(cString: $0) } ?? "error \(verify)"
                ERR_clear_error()
                abandon()
                throw RedisLinkError(.refused, "the server's certificate failed verification: \(text)")
            }
            let detail = code == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 ? "the server closed the connection" : drainErrors()
            abandon()
            throw RedisLinkError(.unavailable, "TLS handshake failed: \(detail)")
        }
        guard let reader = hapi_redis_reader_create() else {
            abandon()
            throw RedisLinkError(.unavailable, "out of memory for a reply parser")
        }
        return RedisTLSLink(fd: fd, ssl: ssl, reader: reader, commandMilliseconds: Int32(clamping: max(1, commandTimeout.wholeMilliseconds)))
    }

    deinit { close() }

    func exchange(_ commands: [[[UInt8]]]) throws(RedisLinkError) -> [RedisReply] {
        guard !closed else { throw RedisLinkError(.unavailable, "the connection is closed") }
        guard let bytes = RedisCommandEncoder.encode(commands) else { throw RedisLinkError(.unavailable, "cannot encode a command") }
        try write(bytes)
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            // Whatever the parser already holds first.
            while replies.count < commands.count {
                var reply: UnsafeMutablePointer<redisReply>?
                guard hapi_redis_reader_get_reply(reader, &reply) == REDIS_OK else {
                    let text = hapi_redis_reader_errstr(reader).map { String(cString: $0) } ?? "protocol error"
                    throw RedisLinkError(.unavailable, "a malformed reply: \(text)")
                }
                guard let reply else { break }
                replies.append(RedisReply(reply))
                hapi_redis_free_reply(reply)
            }
            if replies.count == commands.count { return replies }
            let count = try read(into: &buffer)
            let fed = buffer.withUnsafeBufferPointer { raw in
                raw.baseAddress.map { $0.withMemoryRebound(to: CChar.self, capacity: count) { hapi_redis_reader_feed(reader, $0, count) } }
                    ?? REDIS_ERR
            }
            guard fed == REDIS_OK else { throw RedisLinkError(.unavailable, "cannot buffer a reply") }
            guard hapi_redis_reader_buffered(reader) <= Self.maximumBufferedBytes else {
                throw RedisLinkError(.unavailable, "a reply larger than \(Self.maximumBufferedBytes) bytes")
            }
        }
    }

    var looksClosed: Bool {
        guard !closed else { return true }
        guard RedisSocket.looksClosed(fd) || SSL_pending(ssl) > 0 else { return false }
        // Readable may be only TLS housekeeping (a session ticket, a key update): read it.
        var byte: UInt8 = 0
        ERR_clear_error()
        let rc = SSL_read(ssl, &byte, 1)
        if rc > 0 { return true }  // an answer nobody asked for: out of step
        let code = SSL_get_error(ssl, rc)
        ERR_clear_error()
        return !(code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE)
    }

    func close() {
        guard !closed else { return }
        closed = true
        ERR_clear_error()
        _ = SSL_shutdown(ssl)  // one non-blocking close_notify, not waited for
        ERR_clear_error()
        SSL_free(ssl)
        Platform.close(fd)
        hapi_redis_reader_free(reader)
    }

    // MARK: - I/O

    private func write(_ bytes: [UInt8]) throws(RedisLinkError) {
        var offset = 0
        var deadline = Self.monotonicMilliseconds() + Int64(commandMilliseconds)
        while offset < bytes.count {
            ERR_clear_error()
            let rc = bytes.withUnsafeBytes { raw in
                SSL_write(ssl, raw.baseAddress.map { $0 + offset }, Int32(clamping: bytes.count - offset))
            }
            if rc > 0 {
                offset += Int(rc)
                deadline = Self.monotonicMilliseconds() + Int64(commandMilliseconds)
                continue
            }
            try waitAfter(rc, deadline: deadline, doing: "sending")
        }
    }

    private func read(into buffer: inout [UInt8]) throws(RedisLinkError) -> Int {
        let deadline = Self.monotonicMilliseconds() + Int64(commandMilliseconds)
        while true {
            ERR_clear_error()
            let capacity = Int32(buffer.count)
            let rc = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, capacity) }
            if rc > 0 { return Int(rc) }
            try waitAfter(rc, deadline: deadline, doing: "waiting for an answer")
        }
    }

    /// After an `SSL_read`/`SSL_write` that did nothing: waits for the socket (until
    /// `deadline`) or throws why the connection is over.
    private func waitAfter(_ rc: Int32, deadline: Int64, doing: String) throws(RedisLinkError) {
        let code = SSL_get_error(ssl, rc)
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            let events = Int16(code == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT)
            guard Self.wait(fd, events: events, until: deadline) else {
                throw RedisLinkError(.unavailable, "no answer within \(commandMilliseconds) ms")
            }
        case SSL_ERROR_ZERO_RETURN:
            throw RedisLinkError(.unavailable, "the server closed the connection")
        case SSL_ERROR_SYSCALL:
            let reason = errno == 0 ? "the server closed the connection" : String(cString: strerror(errno))
            ERR_clear_error()
            throw RedisLinkError(.unavailable, "\(doing): \(reason)")
        default:
            throw RedisLinkError(.unavailable, "\(doing): \(Self.drainErrors())")
        }
    }

    /// A connected non-blocking TCP socket to the first of `host`'s addresses that answers.
    private static func openSocket(host: String, port: Int, deadline: Int64, timeoutMilliseconds: Int) throws(RedisLinkError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Platform.streamSocketType
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let list else {
            let text = gai_strerror(rc).map { String(cString: $0) } ?? "error \(rc)"
            throw RedisLinkError(.unavailable, "cannot resolve the host: \(text)")
        }
        defer { freeaddrinfo(list) }
        var failure = "no address"
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let entry = cursor {
            cursor = entry.pointee.ai_next
            let fd = Platform.makeStreamSocket(family: entry.pointee.ai_family)
            guard fd >= 0 else {
                failure = String(cString: strerror(errno))
                continue
            }
            var connected = Platform.connect(fd, entry.pointee.ai_addr, entry.pointee.ai_addrlen) == 0
            if !connected, errno == EINPROGRESS {
                if wait(fd, events: Int16(POLLOUT), until: deadline) {
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                    connected = error == 0
                    if !connected { failure = String(cString: strerror(error)) }
                } else {
                    failure = "no connection within \(timeoutMilliseconds) ms"
                }
            } else if !connected {
                failure = String(cString: strerror(errno))
            }
            if connected {
                var on: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
                setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, socklen_t(MemoryLayout<Int32>.size))
                return fd
            }
            Platform.close(fd)
        }
        throw RedisLinkError(.unavailable, failure)
    }

    /// Polls `fd` for `events` until `deadline` (monotonic milliseconds); false on timeout.
    private static func wait(_ fd: Int32, events: Int16, until deadline: Int64) -> Bool {
        while true {
            let remaining = deadline - monotonicMilliseconds()
            guard remaining > 0 else { return false }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let rc = poll(&entry, 1, Int32(clamping: remaining))
            if rc > 0 { return true }  // ready, or an error the next call reports
            if rc == 0 { return false }
            if errno != EINTR { return true }
        }
    }

    static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// OpenSSL's thread-local error queue as text, emptied.
    static func drainErrors() -> String {
        var messages: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            if messages.count >= 3 {
                ERR_clear_error()
                break
            }
        }
        return messages.isEmpty ? "no OpenSSL error reported" : messages.joined(separator: "; ")
    }
}
