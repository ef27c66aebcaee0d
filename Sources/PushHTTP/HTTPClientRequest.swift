/// One request for `HTTPClient.execute(_:deadline:)`: where it goes as an origin parsed once
/// (never a URL text parsed again per request), the path and query, the header fields, the
/// body, and which addresses its connection may go to.
///
/// Its `description` names the method and the origin only: headers carry JWTs and OAuth
/// tokens, bodies carry push payloads and paths carry device tokens and Web Push capability
/// URLs, so none of them is ever printed.
package struct HTTPClientRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// An HTTP method token (RFC 9110 §9). Checked when the request is executed.
    package struct Method: Sendable, Hashable, CustomStringConvertible {
        package let rawValue: String
        package init(_ rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        package static let get = Method("GET")
        package static let head = Method("HEAD")
        package static let post = Method("POST")
        package static let put = Method("PUT")
        package static let patch = Method("PATCH")
        package static let delete = Method("DELETE")
        package static let options = Method("OPTIONS")
    }

    package var origin: HTTPOrigin
    package var method: Method
    /// Path and query as sent (`/3/device/abc?x=1`): starts with `/`, printable ASCII, no
    /// fragment. Segments taken from data are percent-encoded by their builder
    /// (`HTTPBaseURL.pathSegment`).
    package var path: String
    package var headers: HTTPHeaders
    package var body: [UInt8]
    /// Which resolved addresses this request's connection may go to: `.publicOnly` for a URL
    /// someone else chose (a Web Push endpoint). Connections are pooled per origin *and*
    /// policy, so a request never rides a connection opened under a looser one.
    package var addressPolicy: EndpointAddressPolicy

    package init(
        origin: HTTPOrigin, method: Method = .get, path: String = "/", headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        addressPolicy: EndpointAddressPolicy = .any
    ) {
        self.origin = origin
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.addressPolicy = addressPolicy
    }

    /// The request's absolute URL, for libcurl (the HTTP/2 engine sends origin and path apart).
    var url: String { origin.description + path }

    package var description: String {
        "\(method) \(origin) (\(headers.count) headers, \(body.count)-byte body)"
    }
    package var debugDescription: String { description }
}

// Debuggers and `dump()` walk mirrors, not descriptions: without this they would print the
// path (an APNs device token) and header values (JWTs, OAuth tokens).
extension HTTPClientRequest: CustomReflectable {
    package var customMirror: Mirror {
        Mirror(self, children: ["description": description], displayStyle: .struct)
    }
}
