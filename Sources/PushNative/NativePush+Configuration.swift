import PushHTTP
public import PushTransports

extension NativePush {
    /// How the library runs, as opposed to where it sends (`PushConfiguration`, read from the
    /// environment and settings.json): timeouts, connection limits, per-transport concurrency,
    /// the retry policy and the dispatch window. Every value has a default that suits one hub;
    /// change only what you measured.
    ///
    /// Checked once, by `validate()`, when `NativePush` is built (and by `NativePush.start`
    /// before it opens anything), with the same checks the HTTP client applies, so a
    /// configuration that validates also starts.
    public struct Configuration: Sendable {
        /// How long an exchange may take.
        public struct Timeouts: Sendable {
            /// One request from submission to its answer, including waiting for a connection or
            /// a free stream.
            public var request: Duration
            /// Establishing a connection (TCP and TLS).
            public var connect: Duration
            /// A silent HTTP/2 connection is sent a PING after this long…
            public var pingInterval: Duration
            /// …and closed when the PING is not answered within this.
            public var pingTimeout: Duration

            public init(
                request: Duration = .seconds(10), connect: Duration = .seconds(5), pingInterval: Duration = .seconds(60),
                pingTimeout: Duration = .seconds(5)
            ) {
                self.request = request
                self.connect = connect
                self.pingInterval = pingInterval
                self.pingTimeout = pingTimeout
            }
        }

        /// How many connections and streams the shared HTTP client opens.
        public struct Connections: Sendable {
            /// Connections to one host; requests beyond them and their streams wait in order.
            public var maximumPerHost: Int
            /// Concurrent HTTP/2 streams on one connection (the server's own limit applies too).
            public var maximumConcurrentStreams: Int
            /// Idle connections kept for reuse.
            public var maximumCached: Int
            /// An answer larger than this fails as `response_too_large` (provider answers are a
            /// few hundred bytes).
            public var maximumResponseBytes: Int

            public init(maximumPerHost: Int = 4, maximumConcurrentStreams: Int = 1000, maximumCached: Int = 16, maximumResponseBytes: Int = 1 << 20) {
                self.maximumPerHost = maximumPerHost
                self.maximumConcurrentStreams = maximumConcurrentStreams
                self.maximumCached = maximumCached
                self.maximumResponseBytes = maximumResponseBytes
            }
        }

        /// Requests of one dispatch in flight at once, per transport.
        public struct Concurrency: Sendable {
            public var relay: Int
            public var apns: Int
            public var fcm: Int
            /// Web Push messages of one notification in flight at once, over every push service
            /// together (each message is sealed when it gets a place, so this also bounds the
            /// sealed bodies held at once).
            public var webPush: Int

            public init(relay: Int = 64, apns: Int = 256, fcm: Int = 64, webPush: Int = 64) {
                self.relay = relay
                self.apns = apns
                self.fcm = fcm
                self.webPush = webPush
            }
        }

        /// The egress proxy, overriding both `PushConfiguration`'s (`httpsProxy`, `noProxy` in
        /// settings.json or `HAPI_PUSH_HTTPS_PROXY`/`HAPI_PUSH_NO_PROXY`) and the environment's
        /// (`HTTPS_PROXY`, `NO_PROXY`, …). Nil fields leave the decision to those.
        public struct Proxy: Sendable {
            /// `http://[user:password@]host:port` or `https://…` (TLS to the proxy); "" = direct.
            public var httpsProxy: String?
            /// Comma-separated hosts, domain suffixes, IP addresses, CIDR blocks, `host:port`, `*`.
            public var noProxy: String?

            public init(httpsProxy: String? = nil, noProxy: String? = nil) {
                self.httpsProxy = httpsProxy
                self.noProxy = noProxy
            }
        }

        public var timeouts: Timeouts
        public var connections: Connections
        public var proxy: Proxy
        public var concurrency: Concurrency
        /// Retries of transient answers (429, 5xx); none by default.
        public var retry: PushRetryPolicy
        /// At most this many deliveries per channel are sealed and unfinished at a time (also
        /// capped by the transport's concurrency): the window refills as each delivery ends,
        /// bounding the envelopes and requests held at once without waiting for the slowest.
        public var dispatchWindow: Int

        public init(
            timeouts: Timeouts = Timeouts(), connections: Connections = Connections(), concurrency: Concurrency = Concurrency(),
            retry: PushRetryPolicy = .none, dispatchWindow: Int = 2048, proxy: Proxy = Proxy()
        ) {
            self.proxy = proxy
            self.timeouts = timeouts
            self.connections = connections
            self.concurrency = concurrency
            self.retry = retry
            self.dispatchWindow = dispatchWindow
        }

        /// Throws, naming the value, when a value cannot work. The HTTP client's part is
        /// checked by the client's own check.
        public func validate() throws(NativePushError) {
            do {
                _ = try httpClientConfiguration(caFile: nil, settings: nil).validated()
            } catch {
                throw NativePushError(message: "NativePush.Configuration: \(error.detail ?? error.description)")
            }
            if let url = proxy.httpsProxy, url.contains(where: { !$0.isWhitespace }) {
                do {
                    _ = try HTTPProxy(url: url)
                } catch {
                    throw NativePushError(message: "NativePush.Configuration: proxy.httpsProxy: \(error.detail ?? "invalid proxy URL")")
                }
            }
            for (name, value) in [
                ("concurrency.relay", concurrency.relay), ("concurrency.apns", concurrency.apns), ("concurrency.fcm", concurrency.fcm),
                ("concurrency.webPush", concurrency.webPush), ("dispatchWindow", dispatchWindow),
            ] where value < 1 {
                throw NativePushError(message: "NativePush.Configuration: \(name) must be at least 1 (is \(value))")
            }
            if retry.initialBackoff < .zero || retry.maximumBackoff < .zero || retry.totalDeadline < .zero {
                throw NativePushError(message: "NativePush.Configuration: retry backoffs and deadline must not be negative")
            }
        }

        /// The shared client's configuration: built here only, for `validate()` and for the client.
        func httpClientConfiguration(caFile: String?, settings: PushConfiguration? = nil) -> HTTPClient.Configuration {
            var proxies = settings?.proxyConfiguration ?? HTTPProxyConfiguration()
            if let httpsProxy = proxy.httpsProxy { proxies.httpsProxy = httpsProxy }
            if let noProxy = proxy.noProxy { proxies.noProxy = noProxy }
            return HTTPClient.Configuration(
                requestTimeout: timeouts.request, connectTimeout: timeouts.connect, maximumResponseBodyBytes: connections.maximumResponseBytes,
                additionalTrustedCAFile: caFile, maximumConnectionsPerHost: connections.maximumPerHost,
                maximumConcurrentStreamsPerConnection: connections.maximumConcurrentStreams, maximumCachedConnections: connections.maximumCached,
                pingInterval: timeouts.pingInterval, pingTimeout: timeouts.pingTimeout, proxy: proxies)
        }
    }
}
