/// A base URL an operator configured (the relay URL, an APNs or FCM endpoint override, a
/// service account's `token_uri`), checked once with libcurl's own parser before anything is
/// sent to it, and the percent-encoding of path segments we build from data.
///
/// Refused, each with a message that says why:
/// - anything but an absolute `http`/`https` URL with a host;
/// - a query or a fragment (even an empty `?` or `#`): we append paths such as `/v1/push`, and
///   `https://relay#` would send every push to `/` instead, where a 200 counts as delivered;
/// - user info (`user:password@`): never sent anywhere by us, and a password would be printed
///   and saved;
/// - a port that is not 1–65535;
/// - spaces, control characters or non-ASCII bytes;
/// - `http://` to a host other than loopback when `cleartext` is `.loopbackOnly`, and any
///   `http://` when it is `.never`: credentials (a bearer JWT, an OAuth assertion or access
///   token) and device tokens would cross the network in clear.
package struct HTTPBaseURL: Sendable, Hashable, CustomStringConvertible {
    /// Where plain `http://` is allowed.
    package enum Cleartext: Sendable {
        /// Only to loopback (`localhost`, `127.0.0.0/8`, `::1`): tests and a relay on this host.
        case loopbackOnly
        /// Never.
        case never
    }

    /// The URL as given, without trailing slashes.
    package let text: String
    package let isTLS: Bool
    /// Lowercased, without IPv6 brackets.
    package let host: String
    /// Scheme, host and port, parsed here once: requests to this base carry it as it is.
    package let origin: HTTPOrigin
    /// The path after the origin, without a trailing slash (`""` for none): a request's path
    /// is this plus what it appends (`/v1/push`).
    package let path: String

    package var description: String { text }

    /// Checks `text`; the error's message says what is wrong (and never repeats a password).
    package init(_ text: String, cleartext: Cleartext = .loopbackOnly) throws(HTTPBaseURLError) {
        var trimmed = text
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard !trimmed.isEmpty else { throw HTTPBaseURLError("is empty") }
        guard trimmed.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPBaseURLError("has a space, a control character or a non-ASCII character")
        }
        let lower = trimmed.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else {
            throw HTTPBaseURLError("must start with https:// (or http:// to this host)")
        }
        if trimmed.contains("?") { throw HTTPBaseURLError("must not have a query (?…): paths are appended to it") }
        if trimmed.contains("#") { throw HTTPBaseURLError("must not have a fragment (#…): paths are appended to it") }
        let afterScheme = trimmed[trimmed.index(trimmed.firstIndex(of: ":") ?? trimmed.startIndex, offsetBy: 3)...]
        let authority = afterScheme.prefix { $0 != "/" }
        // libcurl reads `https:///host` as `https://host`; a URL meant to name a host must.
        if authority.isEmpty { throw HTTPBaseURLError("has no host after the scheme's //") }
        if authority.contains("@") {
            throw HTTPBaseURLError("must not hold a user name or password (user:password@): remove them")
        }
        // As written, before libcurl (which accepts :0 and words it differently): 1–65535.
        if let colon = Self.portSeparator(in: authority) {
            let port = authority[authority.index(after: colon)...]
            guard !port.isEmpty, port.count <= 5, port.allSatisfy(\.isASCIIDigit), let number = Int(port), (1...65535).contains(number)
            else { throw HTTPBaseURLError("has an invalid port (1-65535)") }
        }
        let route: HTTPRoute
        do {
            route = try HTTPRoute.parse(trimmed)
        } catch {
            throw HTTPBaseURLError(Self.reason(error))
        }
        if !route.origin.isTLS {
            switch cleartext {
            case .never:
                throw HTTPBaseURLError("must use https://: it carries credentials, which http:// would send in clear")
            case .loopbackOnly where !Self.isLoopback(route.origin.host):
                throw HTTPBaseURLError(
                    "must use https:// (http:// is allowed only to localhost, 127.0.0.1 or ::1): pushes and credentials would cross the network in clear")
            case .loopbackOnly:
                break
            }
        }
        self.text = trimmed
        self.isTLS = route.origin.isTLS
        self.host = route.origin.host
        self.origin = route.origin
        self.path = route.path == "/" ? "" : route.path
    }

    /// `text` with the password of its user info (`user:password@`) shown as `***`; anything
    /// else unchanged. For printing a URL an operator configured.
    package static func redactingPassword(_ text: String) -> String {
        // Leniently, as a URL parser might read it: an authority starts after the scheme's `:`
        // and any slashes (`https://`, `http:/`, `http:`), and after every later `://` (a text
        // whose scheme is not a scheme, `h0p:ts://u:pw@h`), and runs to the path, query or
        // fragment. Authorities are redacted from the last, so earlier positions stay valid.
        // On UTF-8 bytes: every delimiter is ASCII, and no byte of a longer character is, so
        // each cut falls between characters.
        var bytes = Array(text.utf8)
        let (colon, slash, backslash, at) = (UInt8(ascii: ":"), UInt8(ascii: "/"), UInt8(ascii: "\\"), UInt8(ascii: "@"))
        // No `@`, no user info: most texts, returned as they are.
        guard bytes.contains(at) else { return text }
        var starts: [Int] = []
        if let separator = bytes.firstIndex(of: colon) { starts.append(separator + 1) }
        for index in 0..<max(0, bytes.count - 2) where bytes[index] == colon && bytes[index + 1] == slash && bytes[index + 2] == slash {
            if starts.last != index + 1 { starts.append(index + 1) }
        }
        // Found in ascending order: redacted from the last.
        for first in starts.reversed() {
            var start = first
            while start < bytes.count, bytes[start] == slash || bytes[start] == backslash { start += 1 }
            var end = start
            // A backslash does not end it: some parsers read it as `/`, others as user info,
            // and showing `***` for a path is harmless.
            while end < bytes.count, bytes[end] != slash, bytes[end] != UInt8(ascii: "?"), bytes[end] != UInt8(ascii: "#") { end += 1 }
            guard let last = bytes[start..<end].lastIndex(of: at), let separator = bytes[start..<last].firstIndex(of: colon) else { continue }
            bytes.replaceSubrange((separator + 1)..<last, with: "***".utf8)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `text` holds a password in its user info.
    package static func hasPassword(_ text: String) -> Bool { redactingPassword(text) != text }

    /// `localhost`, `*.localhost`, `127.0.0.0/8` or `::1`.
    package static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host.hasSuffix(".localhost") || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCIIDigit) && (Int(part) ?? 256) <= 255
        }
    }

    /// One path segment built from data (an FCM project id, a device token): every byte but
    /// the unreserved ones (`A-Z a-z 0-9 - . _ ~`) percent-encoded, so `/`, `?`, `#` and `..`
    /// can never change where a request goes. (`.` and `..` alone are encoded too.)
    package static func pathSegment(_ value: String) -> String {
        if value == "." { return "%2E" }
        if value == ".." { return "%2E%2E" }
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let digits = Array("0123456789ABCDEF".utf8)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(Unicode.Scalar(digits[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(digits[Int(byte & 0x0F)]))
            }
        }
        return out
    }

    /// The `:` before a port in an authority (after an IPv6 literal's `]`), if any.
    private static func portSeparator(in authority: Substring) -> Substring.Index? {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            let rest = authority[authority.index(after: close)...]
            return rest.first == ":" ? rest.startIndex : nil
        }
        return authority.lastIndex(of: ":")
    }

    private static func reason(_ error: HTTPClientError) -> String {
        switch error.detail {
        case let detail? where detail.hasPrefix("the URL "): return String(detail.dropFirst("the URL ".count))
        case let detail?: return detail
        case nil: return "is not a valid URL"
        }
    }
}

/// Why a base URL was refused: `message` completes "HAPI_PUSH_RELAY_URL …".
package struct HTTPBaseURLError: Error, Sendable, CustomStringConvertible {
    package let message: String
    init(_ message: String) { self.message = message }
    package var description: String { message }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
