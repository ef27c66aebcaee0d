import CHapiRedis
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `redis://`: hiredis's own blocking connection, its connect bounded by `connectTimeout`
/// (`redisConnectWithTimeout`) and every later read and write by `commandTimeout`
/// (`redisSetTimeout`). Commands are appended with `redisAppendCommandArgv` (never a format
/// string) and their replies read in order, so a batch costs one round trip.
final class HiredisLink: RedisLink {
    private let context: UnsafeMutablePointer<redisContext>
    private let commandMilliseconds: Int
    private var closed = false

    private init(context: UnsafeMutablePointer<redisContext>, commandMilliseconds: Int) {
        self.context = context
        self.commandMilliseconds = commandMilliseconds
    }

    static func connect(host: String, port: Int, connectTimeout: Duration, commandTimeout: Duration) throws(RedisLinkError) -> HiredisLink {
        let connectMilliseconds = max(1, Int(connectTimeout.wholeMilliseconds))
        guard let context = hapi_redis_connect(host, Int32(port), connectMilliseconds) else {
            throw RedisLinkError(.unavailable, "out of memory for a connection")
        }
        if hapi_redis_context_error(context) != 0 {
            let detail = Self.describe(context, timeoutMilliseconds: connectMilliseconds, connecting: true)
            redisFree(context)
            throw RedisLinkError(.unavailable, detail)
        }
        let commandMilliseconds = max(1, Int(commandTimeout.wholeMilliseconds))
        guard hapi_redis_set_timeout(context, commandMilliseconds) == REDIS_OK else {
            redisFree(context)
            throw RedisLinkError(.unavailable, "cannot set the command timeout")
        }
        _ = redisEnableKeepAlive(context)
        return HiredisLink(context: context, commandMilliseconds: commandMilliseconds)
    }

    deinit { close() }

    func exchange(_ commands: [[[UInt8]]]) throws(RedisLinkError) -> [RedisReply] {
        guard !closed else { throw RedisLinkError(.unavailable, "the connection is closed") }
        for command in commands {
            let rc = RedisCommandEncoder.withArgv(command) { argc, argv, lengths in hapi_redis_append_argv(context, argc, argv, lengths) }
            guard rc == REDIS_OK else { throw RedisLinkError(.unavailable, Self.describe(context, timeoutMilliseconds: commandMilliseconds)) }
        }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands {
            var reply: UnsafeMutablePointer<redisReply>?
            errno = 0
            let rc = hapi_redis_get_reply_bounded(context, &reply, RedisTLSLink.maximumBufferedBytes)
            if rc == HAPI_REDIS_TOO_LARGE {
                throw RedisLinkError(.unavailable, "a reply larger than \(RedisTLSLink.maximumBufferedBytes) bytes")
            }
            guard rc == REDIS_OK, let reply else {
                throw RedisLinkError(.unavailable, Self.describe(context, timeoutMilliseconds: commandMilliseconds))
            }
            replies.append(RedisReply(reply))
            hapi_redis_free_reply(reply)
        }
        return replies
    }

    var looksClosed: Bool { closed || RedisSocket.looksClosed(hapi_redis_context_fd(context)) }

    func close() {
        guard !closed else { return }
        closed = true
        redisFree(context)
    }

    /// hiredis's error, with a timeout said as one (it reports EAGAIN's text).
    private static func describe(_ context: UnsafeMutablePointer<redisContext>, timeoutMilliseconds: Int, connecting: Bool = false) -> String {
        let code = hapi_redis_context_error(context)
        let text = hapi_redis_context_errstr(context).map { String(cString: $0) } ?? ""
        if code == REDIS_ERR_IO, errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT || text.contains("temporarily unavailable")
            || text.contains("timed out")
        {
            return connecting ? "no connection within \(timeoutMilliseconds) ms" : "no answer within \(timeoutMilliseconds) ms"
        }
        if code == REDIS_ERR_EOF { return "the server closed the connection" }
        if code == REDIS_ERR_PROTOCOL { return "a malformed reply: \(text)" }
        return text.isEmpty ? "connection error \(code)" : text
    }
}

/// Socket helpers both links use.
enum RedisSocket {
    /// True when `fd` is readable or hung up while no reply is expected: the server closed it
    /// (or sent something unasked, which RESP2 never does outside pub/sub).
    static func looksClosed(_ fd: Int32) -> Bool {
        guard fd >= 0 else { return true }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let rc = poll(&entry, 1, 0)
        return rc != 0
    }
}

extension Duration {
    /// Whole milliseconds (rounded down).
    var wholeMilliseconds: Int64 {
        let parts = components
        return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
    }
}
