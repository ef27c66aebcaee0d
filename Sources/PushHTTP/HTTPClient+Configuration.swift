extension HTTPClient {
    /// How an `HTTPClient` connects. TLS peer and host-name verification are always on; there
    /// is deliberately no switch to turn them off.
    package struct Configuration: Sendable {
        /// The whole exchange of one request, including waiting for a connection or a free
        /// stream (the client sends it once). `HTTPRequest.timeout` overrides it.
        package var requestTimeout: Duration
        /// Establishing a connection (TCP and TLS).
        package var connectTimeout: Duration
        /// Responses whose body grows beyond this fail with `HTTPClientError.responseTooLarge`.
        /// APNs, FCM and relay answers are a few hundred bytes.
        package var maximumResponseBodyBytes: Int
        /// A PEM file of one or more CA certificates trusted *in addition to* the system trust
        /// store, e.g. the private CA of a self-hosted relay. Read
        /// once, when the client is created.
        package var additionalTrustedCAFile: String?
        /// Speak HTTP/2 without upgrade to `http://` URLs (h2c, prior knowledge). `https://`
        /// URLs always negotiate HTTP/2 by ALPN, falling back to HTTP/1.1.
        package var forceHTTP2PriorKnowledge: Bool
        /// Connections to one origin, in either engine; requests beyond them and beyond their
        /// streams wait, in order. 0 = unlimited for libcurl, 1 for the HTTP/2 engine.
        package var maximumConnectionsPerHost: Int
        /// Concurrent HTTP/2 streams this client opens on one connection, in either engine;
        /// the server's own SETTINGS_MAX_CONCURRENT_STREAMS applies too.
        package var maximumConcurrentStreamsPerConnection: Int
        /// Idle connections libcurl keeps for reuse (HTTP/1.1 origins only; the HTTP/2 engine
        /// keeps its connections open, probed with PING).
        package var maximumCachedConnections: Int
        /// An HTTP/2 connection that has received nothing for this long is sent a PING, so a
        /// connection that died silently (a NAT that forgot it, a server that hung) is found
        /// before a push is lost on it.
        package var pingInterval: Duration
        /// A PING unanswered for this long closes the connection; the next request opens a new one.
        package var pingTimeout: Duration
        /// Which resolved addresses connections may go to; checked on the address connected to.
        package var addressPolicy: EndpointAddressPolicy = .any
        /// Tests only: answers host-name lookups of the HTTP/2 engine without DNS (numeric
        /// addresses in order, `[]` for a name that does not resolve, nil to ask the system).
        package var resolverOverride: (@Sendable (_ host: String) -> [String]?)? = nil
        /// The egress proxy per origin: the environment (`HTTPS_PROXY`, `NO_PROXY`, …) unless
        /// settings override it. Both engines follow the same decision.
        package var proxy: HTTPProxyConfiguration

        package init(
            requestTimeout: Duration = .seconds(10),
            connectTimeout: Duration = .seconds(5),
            maximumResponseBodyBytes: Int = 1 << 20,
            additionalTrustedCAFile: String? = nil,
            forceHTTP2PriorKnowledge: Bool = false,
            maximumConnectionsPerHost: Int = 4,
            maximumConcurrentStreamsPerConnection: Int = 100,
            maximumCachedConnections: Int = 16,
            pingInterval: Duration = .seconds(60),
            pingTimeout: Duration = .seconds(5),
            proxy: HTTPProxyConfiguration = HTTPProxyConfiguration()
        ) {
            self.proxy = proxy
            self.requestTimeout = requestTimeout
            self.connectTimeout = connectTimeout
            self.maximumResponseBodyBytes = maximumResponseBodyBytes
            self.additionalTrustedCAFile = additionalTrustedCAFile
            self.forceHTTP2PriorKnowledge = forceHTTP2PriorKnowledge
            self.maximumConnectionsPerHost = maximumConnectionsPerHost
            self.maximumConcurrentStreamsPerConnection = maximumConcurrentStreamsPerConnection
            self.maximumCachedConnections = maximumCachedConnections
            self.pingInterval = pingInterval
            self.pingTimeout = pingTimeout
        }

        /// Rejects values either engine would misread.
        package func validated() throws(HTTPClientError) -> Configuration {
            func positive(_ d: Duration, _ name: String) throws(HTTPClientError) {
                if d <= .zero { throw HTTPClientError(.invalidConfiguration, detail: "\(name) must be positive") }
            }
            try positive(requestTimeout, "requestTimeout")
            try positive(connectTimeout, "connectTimeout")
            try positive(pingInterval, "pingInterval")
            try positive(pingTimeout, "pingTimeout")
            // An unusable proxy URL is not checked here: requests through it fail with its
            // error (rather than bypass it), and `hapi-push config` shows why.
            if maximumResponseBodyBytes < 0 {
                throw HTTPClientError(.invalidConfiguration, detail: "maximumResponseBodyBytes must not be negative")
            }
            if maximumConnectionsPerHost < 0 || maximumCachedConnections < 0 {
                throw HTTPClientError(.invalidConfiguration, detail: "connection limits must not be negative")
            }
            if maximumConcurrentStreamsPerConnection < 1 || maximumConcurrentStreamsPerConnection > Int(Int32.max) {
                throw HTTPClientError(
                    .invalidConfiguration, detail: "maximumConcurrentStreamsPerConnection must be at least 1")
            }
            return self
        }
    }
}

extension Duration {
    /// Whole milliseconds, rounded up, clamped to 1...Int32.max: what libcurl's `*_MS`
    /// options accept.
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        if seconds >= Int64(Int32.max) / 1000 { return Int(Int32.max) }
        if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 1 }
        let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int(max(1, min(ms, Int64(Int32.max))))
    }
}
