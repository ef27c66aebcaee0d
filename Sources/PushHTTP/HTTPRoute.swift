import CHapiCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushSync

/// Where one request goes, parsed once by `HTTPClient.send` (with libcurl's URL parser): the
/// origin that selects a connection pool, and the `:path` the HTTP/2 engine sends.
struct HTTPRoute: Sendable {
    let origin: HTTPOrigin
    /// Path and query as sent (`/3/device/abc?x=1`); never empty, always starts with `/`.
    let path: String
}

/// scheme + host + port: where a request goes, parsed once (from a configured base URL or an
/// origin's text) and carried by every `HTTPClientRequest` to it, so no request's URL is
/// built as a string and parsed again. What one pool of connections serves (with the
/// request's address policy).
package struct HTTPOrigin: Sendable, Hashable, CustomStringConvertible {
    package let isTLS: Bool
    /// As in the URL, without IPv6 brackets, lowercased by libcurl's parser.
    package let host: String
    package let port: Int

    init(isTLS: Bool, host: String, port: Int) {
        self.isTLS = isTLS
        self.host = host
        self.port = port
    }

    /// The origin of a base URL checked when it was configured.
    package init(_ base: HTTPBaseURL) {
        self = base.origin
    }

    /// Parses `scheme://authority` (an optional trailing `/`, nothing after it) with libcurl's
    /// parser: `https://api.push.apple.com`, `http://127.0.0.1:8080`, `https://[::1]:8443`.
    ///
    /// - Throws: `HTTPClientError.invalidRequest` for anything else (a path, a query, user
    ///   info, a scheme other than http/https).
    package init(_ text: String) throws(HTTPClientError) {
        guard !text.utf8.contains(UInt8(ascii: "@")) else {
            throw HTTPClientError(.invalidRequest, detail: "an origin must not hold user info")
        }
        let route = try HTTPRoute.parse(text)
        guard route.path == "/", !text.utf8.contains(UInt8(ascii: "?")), !text.utf8.contains(UInt8(ascii: "#")) else {
            throw HTTPClientError(.invalidRequest, detail: "an origin has no path, query or fragment")
        }
        self = route.origin
    }

    package var scheme: String { isTLS ? "https" : "http" }

    /// The `:authority` pseudo-header: host, bracketed if IPv6, and the port unless it is the
    /// scheme's default.
    package var authority: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isTLS ? 443 : 80) ? name : "\(name):\(port)"
    }

    package var description: String { "\(scheme)://\(authority)" }

    /// Whether `host` is a numeric address (IPv4 or IPv6): no DNS, no SNI, the certificate is
    /// checked against an IP SAN.
    var hostIsNumeric: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

extension HTTPRoute {
    /// Origins already parsed, by the URL text before the path (`https://api.push.apple.com`):
    /// a dispatch sends thousands of requests to one origin, and libcurl's parser allocates a
    /// string per part on every call. Bounded: cleared when full.
    private static let knownOrigins = Locked<[Substring: HTTPOrigin]>([:])
    static let knownOriginLimit = 64

    /// Parses an absolute `http`/`https` URL. The fragment is dropped (it is never sent).
    ///
    /// A URL whose scheme and authority were seen before and whose path is plain (printable
    /// ASCII, no `%`, `#`, `@` or dot segments, which libcurl's parser would rewrite) takes the
    /// fast path: the cached origin and the path as given. Anything else goes through libcurl.
    static func parse(_ url: String) throws(HTTPClientError) -> HTTPRoute {
        if let route = fastParse(url) { return route }
        let route = try fullParse(url)
        if let (prefix, _) = split(url) {
            knownOrigins.withLock { known in
                if known.count >= knownOriginLimit { known.removeAll(keepingCapacity: true) }
                known[prefix] = route.origin
            }
        }
        return route
    }

    /// `https://host:port` and the rest, when the authority is plain (no user info, no IPv6).
    private static func split(_ url: String) -> (Substring, Substring)? {
        guard let schemeEnd = url.utf8.firstIndex(of: UInt8(ascii: ":")),
            url.utf8[schemeEnd...].starts(with: "://".utf8)
        else { return nil }
        let authorityStart = url.utf8.index(schemeEnd, offsetBy: 3)
        let rest = url.utf8[authorityStart...]
        let authorityEnd = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? url.utf8.endIndex
        guard authorityEnd > authorityStart,
            !url.utf8[authorityStart..<authorityEnd].contains(where: { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "[") })
        else { return nil }
        return (Substring(url.utf8[..<authorityEnd]), Substring(url.utf8[authorityEnd...]))
    }

    private static func fastParse(_ url: String) -> HTTPRoute? {
        guard let (prefix, path) = split(url), isPlain(path: path),
            let origin = knownOrigins.withLock({ $0[prefix] })
        else { return nil }
        return HTTPRoute(origin: origin, path: String(path))
    }

    /// A path libcurl's parser would keep exactly as it is: starts with `/`, printable ASCII,
    /// no `%`, `#`, `@` or dot segments (what follows a `?` is not looked at).
    static func isPlain(path: some StringProtocol) -> Bool {
        // Read in place where the text is contiguous (checked for every request sent).
        path.utf8.withContiguousStorageIfAvailable { isPlain(bytes: $0) } ?? Array(path.utf8).withUnsafeBufferPointer { isPlain(bytes: $0) }
    }

    private static func isPlain(bytes path: UnsafeBufferPointer<UInt8>) -> Bool {
        guard path.first == UInt8(ascii: "/") else { return false }
        var previous: UInt8 = 0
        var dotRun = 0
        for byte in path {
            guard byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "%"), byte != UInt8(ascii: "#"), byte != UInt8(ascii: "@") else {
                return false
            }
            if byte == UInt8(ascii: "?") { break }  // dots in a query are not segments
            if byte == UInt8(ascii: ".") {
                dotRun = previous == UInt8(ascii: "/") || dotRun > 0 ? dotRun + 1 : 0
            } else {
                if byte == UInt8(ascii: "/"), dotRun == 1 || dotRun == 2 { return false }  // "/./" or "/../"
                dotRun = 0
            }
            previous = byte
        }
        return !(dotRun == 1 || dotRun == 2)  // a trailing "/." or "/.."
    }

    private static func fullParse(_ url: String) throws(HTTPClientError) -> HTTPRoute {
        guard !url.utf8.contains(0) else {
            throw HTTPClientError(.invalidRequest, detail: "the URL contains a NUL byte")
        }
        guard let handle = curl_url() else {
            throw HTTPClientError(.other, detail: "curl_url failed (out of memory)")
        }
        defer { curl_url_cleanup(handle) }
        let rc = curl_url_set(handle, CURLUPART_URL, url, 0)
        guard rc == CURLUE_OK else {
            let reason = curl_url_strerror(rc).map { String(cString: $0) } ?? "malformed"
            throw HTTPClientError(.invalidRequest, detail: "the URL is not a valid absolute URL (\(reason))")
        }
        func part(_ which: CURLUPart, _ flags: UInt32 = 0) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard curl_url_get(handle, which, &value, flags) == CURLUE_OK, let value else { return nil }
            defer { curl_free(value) }
            return String(cString: value)
        }
        let scheme = part(CURLUPART_SCHEME)?.lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw HTTPClientError(.invalidRequest, detail: "the URL scheme must be http or https")
        }
        guard var host = part(CURLUPART_HOST), !host.isEmpty else {
            throw HTTPClientError(.invalidRequest, detail: "the URL has no host")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard let portText = part(CURLUPART_PORT, UInt32(CURLU_DEFAULT_PORT)), let port = Int(portText), (1...65535).contains(port)
        else {
            throw HTTPClientError(.invalidRequest, detail: "the URL has no valid port")
        }
        var path = part(CURLUPART_PATH) ?? "/"
        if path.isEmpty { path = "/" }
        if let query = part(CURLUPART_QUERY) { path += "?" + query }
        guard path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPClientError(.invalidRequest, detail: "the URL path has a space or a non-ASCII byte")
        }
        return HTTPRoute(origin: HTTPOrigin(isTLS: scheme == "https", host: host.lowercased(), port: port), path: path)
    }
}
