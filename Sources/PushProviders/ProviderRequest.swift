/// One request as a provider wants it, before any client sees it: the path under the
/// provider's endpoint, the header fields in wire order, the body bytes. A plain value, so the
/// builders stay pure and the hub and the relay send the same bytes.
package struct ProviderRequest: Sendable, Equatable {
    package var method: String
    /// Starts with `/`; every segment taken from outside is percent-encoded.
    package var path: String
    package var headers: [Header]
    package var body: [UInt8]

    package struct Header: Sendable, Equatable {
        package var name: String
        package var value: String
        package init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    package init(method: String = "POST", path: String, headers: [Header], body: [UInt8]) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// The first value of `name` (ASCII case ignored), for tests and the relay's log.
    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}
