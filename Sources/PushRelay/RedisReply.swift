import CHapiRedis

/// One RESP reply, copied out of hiredis's reply tree (which is freed right after).
enum RedisReply: Sendable, Equatable {
    case status(String)
    case error(String)
    case integer(Int64)
    case bulk([UInt8])
    case null
    case array([RedisReply])

    /// Copies `reply` (hiredis nests at most seven levels deep).
    init(_ reply: UnsafeMutablePointer<redisReply>) {
        let value = reply.pointee
        func text() -> [UInt8] {
            guard let str = value.str, value.len > 0 else { return [] }
            return str.withMemoryRebound(to: UInt8.self, capacity: value.len) { Array(UnsafeBufferPointer(start: $0, count: value.len)) }
        }
        switch value.type {
        case REDIS_REPLY_STATUS: self = .status(String(decoding: text(), as: UTF8.self))
        case REDIS_REPLY_ERROR: self = .error(String(decoding: text(), as: UTF8.self))
        case REDIS_REPLY_INTEGER: self = .integer(value.integer)
        case REDIS_REPLY_STRING: self = .bulk(text())
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            if let element = value.element {
                for index in 0..<value.elements {
                    if let child = element[index] { elements.append(RedisReply(child)) } else { elements.append(.null) }
                }
            }
            self = .array(elements)
        default: self = .null
        }
    }

    /// The error text, bounded and printable (what a log line may carry).
    var errorMessage: String? {
        guard case .error(let text) = self else { return nil }
        return RedisLinkError.printable(text)
    }

    /// The error's code, its first word (`NOSCRIPT`, `WRONGPASS`, `ERR`…).
    var errorCode: String? {
        guard case .error(let text) = self else { return nil }
        return String(text.prefix { $0 != " " }.prefix(32))
    }
}

/// Why a Redis connection or command failed. The message is printable ASCII, bounded, and
/// never holds the password (no command's arguments are ever put in one).
struct RedisLinkError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Kind: Sendable, Equatable {
        /// Could not reach Redis or lost it (refused, timed out, closed, a broken reply): worth
        /// retrying; the relay limits in memory meanwhile.
        case unavailable
        /// Redis answered and refused what the configuration asks (credentials, database,
        /// scripts) or its certificate failed verification: a start-up refuses to go on.
        case refused
    }

    let kind: Kind
    let message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = Self.printable(message)
    }

    var description: String { message }

    /// At most 160 characters, control and non-ASCII characters replaced by "?".
    static func printable(_ text: String) -> String {
        let scalars = text.unicodeScalars.prefix(160).map { $0.value < 0x20 || $0.value > 0x7E ? "?" : $0 }
        return String(String.UnicodeScalarView(scalars))
    }
}

/// A connection to Redis that sends a batch of commands in one write and reads their replies
/// (pipelining). Blocking, with every wait bounded by the configured timeouts: only the
/// limiter's own thread calls it. Two implementations: hiredis's own connection (`redis://`)
/// and TLS on a socket of ours with hiredis's encoder and reply parser (`rediss://`; Debian's
/// hiredis 0.14 has no TLS).
protocol RedisLink: AnyObject {
    /// One reply per command, in order. A thrown error leaves the link unusable.
    func exchange(_ commands: [[[UInt8]]]) throws(RedisLinkError) -> [RedisReply]
    /// Whether the server closed the idle connection (a restart, an idle timeout): nothing is
    /// ever readable between exchanges otherwise.
    var looksClosed: Bool { get }
    func close()
}

/// The RESP form of commands through hiredis (`redisFormatCommandArgv`).
enum RedisCommandEncoder {
    /// Runs `body` with C argument vectors for `arguments` (pointers valid only inside).
    static func withArgv<Result>(
        _ arguments: [[UInt8]], _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int>?) -> Result
    ) -> Result {
        var storage: [UInt8] = []
        storage.reserveCapacity(arguments.reduce(0) { $0 + $1.count } + 1)
        var offsets: [Int] = []
        for argument in arguments {
            offsets.append(storage.count)
            storage.append(contentsOf: argument)
        }
        storage.append(0)  // never empty, so there is a base address
        let lengths = arguments.map(\.count)
        return storage.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return body(0, nil, nil) }
            let raw = UnsafeRawPointer(base)
            var pointers: [UnsafePointer<CChar>?] = offsets.map { raw.advanced(by: $0).assumingMemoryBound(to: CChar.self) }
            return pointers.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { lens in
                    body(Int32(arguments.count), argv.baseAddress, lens.baseAddress)
                }
            }
        }
    }

    /// The RESP bytes of every command, concatenated.
    static func encode(_ commands: [[[UInt8]]]) -> [UInt8]? {
        var out: [UInt8] = []
        for command in commands {
            let ok = withArgv(command) { argc, argv, lengths -> Bool in
                var target: UnsafeMutablePointer<CChar>?
                let length = hapi_redis_format_argv(&target, argc, argv, lengths)
                guard length > 0, let target else { return false }
                defer { hapi_redis_free_command(target) }
                target.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
                    out.append(contentsOf: UnsafeBufferPointer(start: $0, count: Int(length)))
                }
                return true
            }
            guard ok else { return nil }
        }
        return out
    }
}
