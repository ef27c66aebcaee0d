import CHapiMicrohttpd
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where several relay instances keep their shared rate limits: `RELAY_REDIS_URL`,
/// `redis://[user:password@]host[:port][/db]` (`rediss://` for TLS).
///
/// The password is kept for `AUTH` only: `description`, `debugDescription`, the mirror and
/// `redactedURL` show `***` in its place, so printing a configuration never leaks it.
public struct PushRelayRedisConfiguration: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public static let defaultPort = 6379
    /// Every key the relay writes starts with this.
    public static let defaultKeyPrefix = "hapi-push-relay:"

    /// A host name, or an IPv4 or IPv6 address (without brackets).
    public let host: String
    public let port: Int
    /// The logical database (`SELECT`), 0 unless the URL has a path.
    public let database: Int
    /// The ACL user for `AUTH user password`; nil for the default user (`AUTH password`).
    public let username: String?
    /// Only for `AUTH`; never printed.
    let password: String?
    /// `rediss://`: TLS with verification always on.
    public let usesTLS: Bool
    /// A PEM bundle trusted for `rediss://` in addition to the system store.
    public var caFile: String?
    /// The variable `caFile` came from, for messages (`RELAY_REDIS_CA_FILE` or `RELAY_CA_FILE`).
    public var caFileVariable: String
    /// Prefix of every key (tests give each run its own).
    public var keyPrefix: String
    /// One attempt to connect (TCP, TLS handshake) may take this long.
    public var connectTimeout: Duration
    /// Each read or write of a command waits at most this long: a Redis that stops answering
    /// costs a push about this much once, then the relay limits in memory until it is back.
    public var commandTimeout: Duration
    /// The longest wait between two reconnection attempts (they start at 100 ms and double).
    public var maximumBackoff: Duration

    /// Parses `url`.
    ///
    /// - Throws: `PushRelayStartupError` naming `RELAY_REDIS_URL` and what is wrong with it; the
    ///   message never repeats any part of the URL (a mistyped one may have the password where
    ///   the port should be).
    public init(url: String, caFile: String? = nil, caFileVariable: String = "RELAY_REDIS_CA_FILE") throws(PushRelayStartupError) {
        let bytes = Array(url.utf8)
        func fail(_ problem: String) -> PushRelayStartupError {
            PushRelayStartupError("RELAY_REDIS_URL must be redis://[user:password@]host[:port][/db] (rediss:// for TLS): \(problem)")
        }
        let lower = url.lowercased()
        let schemeLength: Int
        if lower.hasPrefix("rediss://") {
            usesTLS = true
            schemeLength = 9
        } else if lower.hasPrefix("redis://") {
            usesTLS = false
            schemeLength = 8
        } else {
            throw fail("it starts with neither redis:// nor rediss://")
        }
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw fail("it holds a space, a control or a non-ASCII character (percent-encode them in the password)")
        }
        let rest = Array(bytes[schemeLength...])
        // The user information ends at the last "@": a password may hold an unencoded "@".
        var authorityStart = 0
        var user: String?
        var secret: String?
        if let at = rest.lastIndex(of: 0x40) {
            let info = rest[..<at]
            authorityStart = at + 1
            let colon = info.firstIndex(of: 0x3A)
            guard let decodedUser = Self.percentDecoded(colon.map { info[..<$0] } ?? info[...]) else {
                throw fail("the user has a broken percent escape")
            }
            if let colon {
                guard let decodedPassword = Self.percentDecoded(info[(colon + 1)...]) else {
                    throw fail("the password has a broken percent escape")
                }
                if !decodedPassword.isEmpty {
                    secret = decodedPassword
                    user = decodedUser.isEmpty ? nil : decodedUser
                } else if !decodedUser.isEmpty {
                    throw fail("the password is empty")
                }
            } else if !decodedUser.isEmpty {
                throw fail("it names a user but no password (redis://:PASSWORD@host for the default user, redis://USER:PASSWORD@host for an ACL user)")
            }
        }
        var authority = Array(rest[authorityStart...])
        var path: [UInt8] = []
        if let slash = authority.firstIndex(of: 0x2F) {
            path = Array(authority[(slash + 1)...])
            authority = Array(authority[..<slash])
        }
        if path.contains(0x3F) || path.contains(0x23) || authority.contains(0x3F) || authority.contains(0x23) {
            throw fail("query parameters and fragments are not supported (the database goes in the path: redis://host:6379/2)")
        }
        var hostBytes = authority
        var portBytes: [UInt8]?
        if authority.first == 0x5B {  // [IPv6]
            guard let close = authority.firstIndex(of: 0x5D) else { throw fail("an IPv6 address lacks its closing bracket") }
            hostBytes = Array(authority[1..<close])
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == 0x3A else { throw fail("something follows the IPv6 address that is not :port") }
                portBytes = Array(after.dropFirst())
            }
            guard Self.isIPv6(String(decoding: hostBytes, as: UTF8.self)) else { throw fail("the bracketed host is not an IPv6 address") }
        } else {
            if let colon = authority.lastIndex(of: 0x3A) {
                hostBytes = Array(authority[..<colon])
                portBytes = Array(authority[(colon + 1)...])
            }
            guard !hostBytes.isEmpty else { throw fail("the host is missing") }
            guard hostBytes.count <= 253,
                hostBytes.allSatisfy({ Self.isHostByte($0) })
            else { throw fail("the host must be a name or an address (an IPv6 address goes in brackets)") }
        }
        guard !hostBytes.isEmpty else { throw fail("the host is missing") }
        host = String(decoding: hostBytes, as: UTF8.self)
        if let portBytes {
            guard !portBytes.isEmpty, portBytes.count <= 5, portBytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = Int(String(decoding: portBytes, as: UTF8.self)), (1...65535).contains(value)
            else { throw fail("the port is not a number from 1 to 65535") }
            port = value
        } else {
            port = Self.defaultPort
        }
        if path.isEmpty {
            database = 0
        } else {
            guard path.count <= 6, path.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int(String(decoding: path, as: UTF8.self)) else {
                throw fail("the path must be a database number such as /0")
            }
            database = value
        }
        username = user
        password = secret
        self.caFile = caFile
        self.caFileVariable = caFileVariable
        keyPrefix = Self.defaultKeyPrefix
        connectTimeout = .milliseconds(200)
        commandTimeout = .milliseconds(100)
        maximumBackoff = .seconds(5)
    }

    /// Whether the URL carries a password (sent with `AUTH`).
    public var hasPassword: Bool { password != nil }

    /// The URL with the password replaced by `***`: what logs and messages show.
    public var redactedURL: String {
        var text = usesTLS ? "rediss://" : "redis://"
        if password != nil { text += (username.map(Self.printable) ?? "") + ":***@" }
        text += host.contains(":") ? "[\(host)]" : host
        text += ":\(port)/\(database)"
        return text
    }

    public var description: String { redactedURL }
    public var debugDescription: String { "PushRelayRedisConfiguration(\(redactedURL))" }
    public var customMirror: Mirror {
        Mirror(self, children: ["url": redactedURL, "caFile": caFile as Any, "keyPrefix": keyPrefix], displayStyle: .struct)
    }

    static func percentDecoded<Bytes: Collection>(_ bytes: Bytes) -> String? where Bytes.Element == UInt8 {
        var out: [UInt8] = []
        var iterator = bytes.makeIterator()
        while let byte = iterator.next() {
            guard byte == 0x25 else {
                out.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            out.append(high << 4 | low)
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    private static func isHostByte(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2E || byte == 0x2D
            || byte == 0x5F
    }

    static func isIPv6(_ text: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET6, text, &address) == 1
    }

    static func isNumericHost(_ text: String) -> Bool {
        var v4 = in_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || isIPv6(text)
    }

    /// At most 64 printable ASCII characters (a user name from the URL, for the redacted form).
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(64).map { $0.value < 0x21 || $0.value > 0x7E ? "?" : $0 }))
    }
}
