/// Why `HTTPClient.send(_:)` failed.
///
/// A struct over a private code (rather than a public enum) so cases can be added without
/// breaking callers: compare against the static members; equality looks at the kind only.
/// `description` is safe to log: it holds the kind, libcurl's code and message (which name
/// at most a host and port), never request headers, bodies or paths, which carry JWTs,
/// OAuth tokens and device tokens.
package struct HTTPClientError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Code: Sendable, Hashable {
        case dnsFailure
        case connectionRefused
        case tlsFailure
        case timeout
        case connectionLost
        case streamRefused
        case cancelled
        case shutdown
        case responseTooLarge
        case badResponse
        case invalidRequest
        case invalidConfiguration
        case other
        // Egress proxies.
        case proxyAuthRequired
        case proxyRefused
        /// Every address of the host is refused by the client's `EndpointAddressPolicy`.
        case addressNotAllowed
    }

    package let code: Code
    /// libcurl's `CURLcode` when libcurl reported the failure.
    package let curlCode: Int?
    /// libcurl's message for `curlCode`, or what was invalid.
    package let detail: String?

    init(_ code: Code, curlCode: Int? = nil, detail: String? = nil) {
        self.code = code
        self.curlCode = curlCode
        self.detail = detail
    }

    package static func == (lhs: HTTPClientError, rhs: HTTPClientError) -> Bool { lhs.code == rhs.code }
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// The host name did not resolve.
    package static let dnsFailure = HTTPClientError(.dnsFailure)
    /// No TCP connection could be made: nothing listens there, or it is unreachable.
    package static let connectionRefused = HTTPClientError(.connectionRefused)
    /// The TLS handshake failed: most often the server's certificate does not verify against
    /// the trusted CAs, or its name does not match the URL's host.
    package static let tlsFailure = HTTPClientError(.tlsFailure)
    /// The request, or its connect phase, did not finish within its timeout.
    package static let timeout = HTTPClientError(.timeout)
    /// The connection or stream broke after the request may have been sent: the server may
    /// or may not have acted on it.
    package static let connectionLost = HTTPClientError(.connectionLost)
    /// The server refused the stream (HTTP/2 REFUSED_STREAM, or GOAWAY before processing it)
    /// or the request never left before its connection closed: it was not processed, so it is
    /// safe to send again (the client never does; the provider layer's exchanges do, once).
    package static let streamRefused = HTTPClientError(.streamRefused)
    /// The calling task was cancelled; the transfer was aborted.
    package static let cancelled = HTTPClientError(.cancelled)
    /// The client was shut down before the request completed.
    package static let shutdown = HTTPClientError(.shutdown)
    /// The response body exceeded `Configuration.maximumResponseBodyBytes`; the transfer
    /// was aborted.
    package static let responseTooLarge = HTTPClientError(.responseTooLarge)
    /// The server answered something that is not HTTP (garbage, HTTP/0.9, a malformed status
    /// line or headers): its fault, not our request's. It may have processed the request.
    package static let badResponse = HTTPClientError(.badResponse)
    /// The request is malformed: not an absolute http(s) URL, a bad method token, or a header
    /// name or value that would break the framing.
    package static let invalidRequest = HTTPClientError(.invalidRequest)
    /// The configuration cannot be used: an unreadable CA file, or libcurl lacks a feature.
    package static let invalidConfiguration = HTTPClientError(.invalidConfiguration)
    /// Any other libcurl failure; `curlCode` and `detail` say which.
    package static let other = HTTPClientError(.other)
    /// The proxy answered CONNECT with 407: credentials missing or wrong. Nothing reached the
    /// origin.
    package static let proxyAuthRequired = HTTPClientError(.proxyAuthRequired)
    /// The proxy refused CONNECT with another status (in `detail`), e.g. 403 for a port it
    /// does not tunnel to. Nothing reached the origin.
    package static let proxyRefused = HTTPClientError(.proxyRefused)
    /// The host resolves only to addresses the client's `EndpointAddressPolicy` refuses
    /// (loopback, private, link-local…): nothing was sent.
    package static let addressNotAllowed = HTTPClientError(.addressNotAllowed)

    package var description: String {
        var text = summary
        if let curlCode { text += " [curl \(curlCode)]" }
        if let detail, !detail.isEmpty { text += ": \(detail)" }
        return text
    }

    private var summary: String {
        switch code {
        case .dnsFailure: "DNS resolution failed"
        case .connectionRefused: "could not connect to the server"
        case .tlsFailure: "TLS handshake or certificate verification failed"
        case .timeout: "the request timed out"
        case .connectionLost: "the connection was lost before the response completed"
        case .streamRefused: "the server refused the stream without processing the request"
        case .cancelled: "the request was cancelled"
        case .shutdown: "the HTTP client was shut down"
        case .responseTooLarge: "the response body exceeded the configured maximum"
        case .badResponse: "the server's answer is not valid HTTP"
        case .invalidRequest: "invalid request"
        case .invalidConfiguration: "invalid HTTP client configuration"
        case .other: "the HTTP transfer failed"
        case .proxyAuthRequired: "the proxy wants (other) credentials"
        case .proxyRefused: "the proxy refused the tunnel"
        case .addressNotAllowed: "the host's addresses are not allowed (loopback, private or reserved network)"
        }
    }
}
