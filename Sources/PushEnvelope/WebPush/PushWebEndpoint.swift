#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Our stricter rules for a Web Push endpoint (the JavaScript hub checks only that it is a
/// non-empty string): the hub will POST to it, so it must be an absolute `https` URL of at most
/// 2,048 bytes with a host and no user info, and no byte a URL parser could read two ways.
/// Every rule is a row of docs/wire.md's subscription table.
package enum PushWebEndpoint {
    package static let maximumByteCount = 2048

    /// The parts of an accepted endpoint.
    package struct Parts: Sendable, Equatable {
        /// Lower-cased; an IPv6 literal without its brackets.
        package let host: String
        package let isIPv6Literal: Bool
        /// The port, 443 when absent.
        package let port: Int
        /// As written in the URL (nil when absent), for the origin.
        package let writtenPort: String?
        /// Path and query, at least "/".
        package let pathAndQuery: String

        /// `https://host[:port]`, the port as written: the VAPID audience and the request's origin.
        package var origin: String {
            "https://" + (isIPv6Literal ? "[\(host)]" : host) + (writtenPort.map { ":" + $0 } ?? "")
        }
    }

    /// Nil when `endpoint` breaks a rule.
    package static func parse(_ endpoint: String) -> Parts? {
        let bytes = Array(endpoint.utf8)
        guard bytes.count <= maximumByteCount, bytes.count > 8 else { return nil }
        // Printable ASCII only: a browser's endpoint is already percent-encoded.
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }) else { return nil }
        guard String(decoding: bytes.prefix(8), as: UTF8.self).lowercased() == "https://" else { return nil }
        let rest = bytes.dropFirst(8)
        let authorityEnd = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? rest.endIndex
        let authority = Array(rest[rest.startIndex..<authorityEnd])
        guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return nil }
        var hostBytes: ArraySlice<UInt8>
        var portBytes: ArraySlice<UInt8>?
        var isIPv6 = false
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostBytes = authority[1..<close]
            isIPv6 = true
            let after = authority[(close + 1)...]
            if !after.isEmpty {
                guard after.first == UInt8(ascii: ":") else { return nil }
                portBytes = after.dropFirst()
            }
            guard !hostBytes.isEmpty, hostBytes.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }),
                isIPv6Address(hostBytes)
            else { return nil }
        } else {
            if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
                hostBytes = authority[..<colon]
                portBytes = authority[(colon + 1)...]
            } else {
                hostBytes = authority[...]
            }
            let allowed = { (c: UInt8) in
                (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || (c >= 0x30 && c <= 0x39) || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
            }
            guard !hostBytes.isEmpty, hostBytes.count <= 253, hostBytes.allSatisfy(allowed) else { return nil }
        }
        var port = 443
        var writtenPort: String?
        if let portBytes {
            guard !portBytes.isEmpty, portBytes.count <= 5, portBytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = Int(String(decoding: portBytes, as: UTF8.self)), (1...65535).contains(value)
            else { return nil }
            port = value
            writtenPort = String(decoding: portBytes, as: UTF8.self)
        }
        var path = String(decoding: rest[authorityEnd...], as: UTF8.self)
        if let hash = path.firstIndex(of: "#") { path = String(path[..<hash]) }
        if path.isEmpty || path.first == "?" { path = "/" + path }
        return Parts(
            host: String(decoding: hostBytes, as: UTF8.self).lowercased(), isIPv6Literal: isIPv6, port: port, writtenPort: writtenPort,
            pathAndQuery: path)
    }

    /// `https://host[:port]` (RFC 8292's `aud`): the host lower-cased, the port as written.
    package static func origin(of endpoint: String) -> String? {
        parse(endpoint)?.origin
    }

    /// Whether `text` is an IPv6 address as `inet_pton(AF_INET6)` reads it (RFC 4291 §2.2: at
    /// most one `::`, eight groups of at most four hex digits, an IPv4 tail): `[1]` and
    /// `[1::2::3]` are not.
    private static func isIPv6Address(_ text: ArraySlice<UInt8>) -> Bool {
        guard text.count <= 45 else { return false }
        var address = in6_addr()
        let name = String(decoding: text, as: UTF8.self)
        return inet_pton(AF_INET6, name, &address) == 1
    }

    private static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46)
    }
}
