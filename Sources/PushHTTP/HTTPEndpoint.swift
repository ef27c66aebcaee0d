/// A configured endpoint (the relay's base URL, APNs', FCM's, an origin of Web Push
/// subscriptions) parsed once, so each request to it carries its origin and path instead of a
/// URL built as text and parsed again per push.
///
/// An endpoint that does not parse is kept as its text: its requests then fail when sent, with
/// the same `invalidRequest` a URL of it would give, never here.
package struct HTTPEndpoint: Sendable, CustomStringConvertible {
    /// As configured, trailing slashes dropped.
    package let text: String
    /// Its origin, and the path prefix every request's path follows ("" for none).
    private let parsed: (origin: HTTPOrigin, prefix: String)?

    package init(_ text: String) {
        var trimmed = Substring(text)
        while trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        self.text = String(trimmed)
        // A query or fragment in a base URL has no place before a request's path: such an
        // endpoint stays text, and libcurl's parser says what it makes of the whole URL.
        if !self.text.utf8.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }),
            let route = try? HTTPRoute.parse(self.text)
        {
            parsed = (route.origin, route.path == "/" ? "" : route.path)
        } else {
            parsed = nil
        }
    }

    /// The request for `path` (starting with `/`) at this endpoint.
    package func request(
        method: HTTPRequest.Method, path: String, headers: HTTPHeaders, body: [UInt8], timeout: Duration? = nil,
        addressPolicy: EndpointAddressPolicy = .any
    ) -> HTTPRequest {
        // A path libcurl would rewrite (dot segments, `%`) goes as a URL, so it is sent exactly as
        // before; the provider paths (hex tokens, fixed routes) never do.
        guard let parsed, HTTPRoute.isPlain(path: path) else {
            return HTTPRequest(method: method, url: text + path, headers: headers, body: body, timeout: timeout, addressPolicy: addressPolicy)
        }
        return HTTPRequest(
            method: method, route: HTTPRoute(origin: parsed.origin, path: parsed.prefix + path), headers: headers, body: body,
            timeout: timeout, addressPolicy: addressPolicy)
    }

    /// The origin only (user info and paths are never printed).
    package var description: String { parsed.map { $0.origin.description } ?? HTTPRequest.redactedOrigin(of: text) }
}
