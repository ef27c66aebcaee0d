/// One HTTP request for `HTTPClient.send(_:)`.
///
/// Its `description` names the method and the authority only: headers carry JWTs and
/// OAuth tokens, bodies carry push payloads and APNs paths carry device tokens, so none of
/// them is ever printed.
package struct HTTPRequest: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    package typealias Method = HTTPClientRequest.Method

    package var method: Method
    /// Where it goes: a URL text (parsed when it is sent), or an origin parsed once with the
    /// path (`HTTPEndpoint`: every push to a configured endpoint, never a URL built as text and
    /// parsed again).
    private var target: Target
    package var headers: HTTPHeaders
    package var body: [UInt8]
    /// Overrides `HTTPClient.Configuration.requestTimeout` for this request: the whole
    /// exchange (sent once), including waiting for a connection or a free stream.
    package var timeout: Duration?
    /// Where this request may connect (`.publicOnly` for an address a client chose, a Web Push
    /// endpoint): per request, so one client serves trusted origins and capability URLs alike;
    /// connections are never shared across policies.
    package var addressPolicy: EndpointAddressPolicy

    package init(
        method: Method = .get, url: String, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [],
        timeout: Duration? = nil, addressPolicy: EndpointAddressPolicy = .any
    ) {
        self.method = method
        self.target = .url(url)
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.addressPolicy = addressPolicy
    }

    /// A request to an origin parsed once (`HTTPEndpoint.request`): nothing about where it goes
    /// is parsed when it is sent. The path is checked then, as every request's is.
    init(method: Method, route: HTTPRoute, headers: HTTPHeaders, body: [UInt8], timeout: Duration?, addressPolicy: EndpointAddressPolicy) {
        self.method = method
        self.target = .route(route)
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.addressPolicy = addressPolicy
    }

    enum Target: Sendable {
        case url(String)
        case route(HTTPRoute)
    }

    /// An absolute `http://` or `https://` URL. Setting it makes the request one to parse.
    package var url: String {
        get {
            switch target {
            case .url(let text): text
            case .route(let route): route.origin.description + route.path
            }
        }
        set { target = .url(newValue) }
    }

    /// Whether it carries an origin parsed before (nothing to parse when it is sent).
    var carriesRoute: Bool {
        if case .route = target { return true }
        return false
    }

    /// Origin and path: parsed once before (an endpoint's), or now from the URL text.
    var route: HTTPRoute {
        get throws(HTTPClientError) {
            switch target {
            case .url(let text): try HTTPRoute.parse(text)
            case .route(let route): route
            }
        }
    }

    package var description: String {
        let origin: String
        switch target {
        case .url(let text): origin = Self.redactedOrigin(of: text)
        case .route(let route): origin = route.origin.description
        }
        return "\(method) \(origin) (\(headers.count) headers, \(body.count)-byte body)"
    }
    package var debugDescription: String { description }

    /// `scheme://authority` of `url`, without path, query or userinfo; `<invalid URL>` if it
    /// has no recognisable scheme.
    static func redactedOrigin(of url: String) -> String {
        guard let schemeEnd = url.firstRange(of: "://") else { return "<invalid URL>" }
        let scheme = url[..<schemeEnd.lowerBound]
        let rest = url[schemeEnd.upperBound...]
        var authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        return "\(scheme)://\(authority)"
    }
}

/// A complete HTTP response. Bodies are bounded by
/// `HTTPClient.Configuration.maximumResponseBodyBytes`.
package struct HTTPResponse: Sendable, CustomStringConvertible {
    /// The protocol version the exchange actually used.
    package enum Version: Sendable, Hashable, CustomStringConvertible {
        case http1_0
        case http1_1
        case http2
        case http3

        package var description: String {
            switch self {
            case .http1_0: "HTTP/1.0"
            case .http1_1: "HTTP/1.1"
            case .http2: "HTTP/2"
            case .http3: "HTTP/3"
            }
        }
    }

    package var status: Int
    /// Response header fields in arrival order, names lowercased.
    package var headers: HTTPHeaders
    package var body: [UInt8]
    package var httpVersion: Version

    package init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], httpVersion: Version) {
        self.status = status
        self.headers = headers
        self.body = body
        self.httpVersion = httpVersion
    }

    /// Status, version and sizes; never header values or the body.
    package var description: String {
        "\(httpVersion) \(status) (\(headers.count) headers, \(body.count)-byte body)"
    }
}

/// An ordered list of header fields. Lookups ignore ASCII case; the names of response headers
/// are lowercased. `description` prints names only: values carry credentials.
package struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral,
    CustomStringConvertible
{
    package struct Field: Sendable, Hashable {
        package var name: String
        package var value: String
        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var fields: [Field]

    package init() { fields = [] }

    package init(_ pairs: [(String, String)]) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    package init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    package var count: Int { fields.count }
    package var isEmpty: Bool { fields.isEmpty }

    /// Appends a field, keeping any earlier field of the same name.
    package mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Removes every field named `name`, then appends one.
    package mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    package mutating func remove(name: String) {
        fields.removeAll { Self.namesEqual($0.name, name) }
    }

    /// Every value of `name`, in order.
    package subscript(name: String) -> [String] {
        fields.compactMap { Self.namesEqual($0.name, name) ? $0.value : nil }
    }

    /// The first value of `name`.
    package func first(name: String) -> String? {
        fields.first { Self.namesEqual($0.name, name) }?.value
    }

    package func contains(name: String) -> Bool {
        fields.contains { Self.namesEqual($0.name, name) }
    }

    package func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    package var description: String {
        "HTTPHeaders(\(fields.map(\.name).joined(separator: ", ")); values redacted)"
    }

    static func namesEqual(_ a: String, _ b: String) -> Bool {
        let a = a.utf8
        let b = b.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { asciiLowercase($0) == asciiLowercase($1) }
    }

    static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }
}

// Debuggers and `dump()` walk mirrors, not descriptions: without these they would print the
// URL path (an APNs device token) and header values (JWTs, OAuth tokens).
extension HTTPRequest: CustomReflectable {
    package var customMirror: Mirror {
        Mirror(self, children: ["description": description], displayStyle: .struct)
    }
}

extension HTTPHeaders: CustomReflectable {
    package var customMirror: Mirror {
        Mirror(self, children: ["description": description], displayStyle: .struct)
    }
}

extension HTTPHeaders.Field: CustomStringConvertible, CustomReflectable {
    /// The name only: the value may be a credential.
    package var description: String { "\(name): <redacted>" }
    package var customMirror: Mirror { Mirror(self, children: ["name": name], displayStyle: .struct) }
}
