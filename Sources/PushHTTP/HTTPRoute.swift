import CHapiCurl
import Glibc

/// Where one request goes, parsed once by `HTTPClient.send` (with libcurl's URL parser): the
/// origin that selects a connection pool, and the `:path` the HTTP/2 engine sends.
struct HTTPRoute: Sendable {
    let origin: HTTPOrigin
    /// Path and query as sent (`/3/device/abc?x=1`); never empty, always starts with `/`.
    let path: String
}

/// scheme + host + port: what one pool of connections serves.
struct HTTPOrigin: Sendable, Hashable, CustomStringConvertible {
    let isTLS: Bool
    /// As in the URL, without IPv6 brackets, lowercased by libcurl's parser.
    let host: String
    let port: Int

    /// The `:authority` pseudo-header: host, bracketed if IPv6, and the port unless it is the
    /// scheme's default.
    var authority: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (isTLS ? 443 : 80) ? name : "\(name):\(port)"
    }

    var description: String { "\(isTLS ? "https" : "http")://\(authority)" }

    /// Whether `host` is a numeric address (IPv4 or IPv6): no DNS, no SNI, the certificate is
    /// checked against an IP SAN.
    var hostIsNumeric: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

extension HTTPRoute {
    /// Parses an absolute `http`/`https` URL. The fragment is dropped (it is never sent).
    static func parse(_ url: String) throws(HTTPClientError) -> HTTPRoute {
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
