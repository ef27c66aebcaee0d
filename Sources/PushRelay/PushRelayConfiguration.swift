import CHapiMicrohttpd
public import PushTransports
import PushHTTP
import PushPlatform

/// Everything `hapi-push-relay` runs with. `init(environment:)` reads the official relay's
/// variables (docs/relay.md); tests and embedders may also build one directly.
public struct PushRelayConfiguration: Sendable {
    /// The iOS side: the `.p8` key and where to send.
    public struct APNs: Sendable {
        public enum Environment: String, Sendable {
            case production
            case sandbox

            public var endpoint: String {
                switch self {
                case .production: "https://api.push.apple.com"
                case .sandbox: "https://api.sandbox.push.apple.com"
                }
            }
        }

        public var credentials: APNsCredentials
        public var environment: Environment
        /// Base URL without a trailing slash (`RELAY_APNS_ENDPOINT`, else the environment's).
        public var endpoint: String

        public init(credentials: APNsCredentials, environment: Environment = .production, endpoint: String? = nil) {
            self.credentials = credentials
            self.environment = environment
            self.endpoint = Self.trimmingSlashes(endpoint ?? environment.endpoint)
        }

        static func trimmingSlashes(_ text: String) -> String {
            var text = text
            while text.hasSuffix("/") { text.removeLast() }
            return text
        }
    }

    /// The Android side: the service account of the official app's Firebase project.
    public struct FCM: Sendable {
        public static let defaultPackageName = "run.hapi.companion"
        public static let defaultEndpoint = "https://fcm.googleapis.com"

        public var account: FCMServiceAccount
        /// `restricted_package_name` of every message.
        public var packageName: String
        public var endpoint: String

        public init(account: FCMServiceAccount, packageName: String = FCM.defaultPackageName, endpoint: String? = nil) {
            self.account = account
            self.packageName = packageName
            self.endpoint = APNs.trimmingSlashes(endpoint ?? Self.defaultEndpoint)
        }
    }

    /// How the HTTP server treats clients. The defaults suit one relay for many hubs.
    public struct Server: Sendable {
        /// Descriptors kept for what is not a client connection: the provider and Redis
        /// connections, the metrics listener, libmicrohttpd's own, the log.
        public static let reservedDescriptors = 256
        /// `RELAY_MAX_CONNECTIONS_PER_IP`'s default.
        public static let defaultConnectionsPerAddress = 64
        /// `RELAY_CONNECTION_MEMORY_BYTES`'s default.
        public static let defaultConnectionMemoryBytes = 4 * 1024
        /// The least `connectionMemoryLimitBytes` (smaller values are raised to it).
        public static let minimumConnectionMemoryBytes = 2 * 1024
        /// `RELAY_MAX_CONNECTIONS`'s default: as many as the process's soft descriptor limit
        /// allows, less `reservedDescriptors` (at least 64).
        public static var defaultConnectionLimit: Int {
            guard let descriptors = Platform.descriptorLimit else { return 1024 }
            return max(64, descriptors - reservedDescriptors)
        }

        /// libmicrohttpd polling threads (each with its own epoll set). They only parse and
        /// route: provider calls never run on them.
        public var threads: Int
        /// Connections open at once (`RELAY_MAX_CONNECTIONS`). Near it, the oldest idle
        /// connections are closed to keep room for fresh ones; at it, more wait in the listen
        /// backlog.
        public var connectionLimit: Int
        /// Connections open at once from one peer address (`RELAY_MAX_CONNECTIONS_PER_IP`);
        /// more are closed at accept. 0 for no limit.
        public var connectionsPerAddress: Int
        /// Seconds a connection may stay idle (or send nothing) before it is closed. Not
        /// applied while a push is answered.
        public var connectionTimeoutSeconds: Int
        /// A whole request's deadline: request line and headers within this many seconds of
        /// the request's first byte, the body within this many after the headers; a connection
        /// that misses it is closed, however steadily it trickles.
        public var requestDeadlineSeconds: Int
        /// Memory per connection for the request line, headers and buffers
        /// (`RELAY_CONNECTION_MEMORY_BYTES`). libmicrohttpd 0.9.75 zeroes all of it after each
        /// request, so every kept-alive connection holds this much resident; a request whose
        /// line and headers do not fit in about half of it is answered 431 and closed.
        public var connectionMemoryLimitBytes: Int

        public init(
            threads: Int = 2, connectionLimit: Int = Server.defaultConnectionLimit, connectionTimeoutSeconds: Int = 30,
            connectionMemoryLimitBytes: Int = Server.defaultConnectionMemoryBytes, connectionsPerAddress: Int = Server.defaultConnectionsPerAddress,
            requestDeadlineSeconds: Int = 10
        ) {
            self.threads = max(1, threads)
            self.connectionLimit = max(1, connectionLimit)
            self.connectionTimeoutSeconds = max(1, connectionTimeoutSeconds)
            self.connectionMemoryLimitBytes = min(1 << 20, max(Server.minimumConnectionMemoryBytes, connectionMemoryLimitBytes))
            self.connectionsPerAddress = max(0, connectionsPerAddress)
            self.requestDeadlineSeconds = max(1, requestDeadlineSeconds)
        }
    }

    public static let defaultPort = 8790
    /// The whole request body: more is refused with 413 before it is read.
    public static let maximumBodyBytes = 65_536

    /// Bind address (`RELAY_HOST`): an IPv4 or IPv6 literal, or `localhost`.
    public var host: String
    /// `RELAY_PORT`; 0 picks a free port (see `PushRelayServer.port`).
    public var port: Int
    public var apns: APNs?
    public var fcm: FCM?
    /// `RELAY_TRUST_PROXY`: rate-limit by the first `X-Forwarded-For` hop. Only behind a proxy
    /// that overwrites the header; otherwise a client could pick its own IP.
    public var trustProxy: Bool
    /// `RELAY_CA_FILE`: a PEM bundle trusted for outbound TLS in addition to the system store.
    public var caFile: String?
    /// `RELAY_HTTPS_PROXY`: the egress proxy to APNs, FCM and Google's OAuth endpoint
    /// (`http://[user:password@]host:port` or `https://…`), overriding `HTTPS_PROXY`; "" = direct.
    public var httpsProxy: String?
    /// `RELAY_NO_PROXY`: hosts that bypass the proxy, overriding `NO_PROXY`.
    public var noProxy: String?
    /// The standard proxy variables (`HTTPS_PROXY`, `https_proxy`, `ALL_PROXY`, `NO_PROXY`, …)
    /// as `init(environment:)` found them; used when `httpsProxy`/`noProxy` are nil.
    public var proxyEnvironment: [String: String] = [:]
    /// `RELAY_METRICS_PORT`: Prometheus text on `http://127.0.0.1:PORT/metrics`; nil for none.
    public var metricsPort: Int?
    /// How long one push may take from validation to answer; a provider that never answers
    /// gets a 502 after this.
    public var providerTimeout: Duration
    public var server: Server
    /// `RELAY_REDIS_URL`: the rate limits live in this Redis, shared by every relay on it; nil
    /// for limits in this process's memory.
    public var redis: PushRelayRedisConfiguration?
    /// The per-client-IP limit (the spec's 300 a minute, burst 300).
    public var clientLimit: PushRelayRateLimit
    /// The per-device-token limit (the spec's 30 a minute, burst 30).
    public var deviceLimit: PushRelayRateLimit

    public init(
        host: String = "0.0.0.0", port: Int = PushRelayConfiguration.defaultPort, apns: APNs? = nil, fcm: FCM? = nil, trustProxy: Bool = false,
        caFile: String? = nil, metricsPort: Int? = nil, providerTimeout: Duration = .seconds(10), server: Server = Server(),
        redis: PushRelayRedisConfiguration? = nil, clientLimit: PushRelayRateLimit = .client, deviceLimit: PushRelayRateLimit = .device
    ) {
        self.host = host
        self.port = port
        self.apns = apns
        self.fcm = fcm
        self.trustProxy = trustProxy
        self.caFile = caFile
        self.metricsPort = metricsPort
        self.providerTimeout = providerTimeout
        self.server = server
        self.redis = redis
        self.clientLimit = clientLimit
        self.deviceLimit = deviceLimit
    }

    /// How the providers are reached: `direct (why)` or the proxy (password `***`).
    public var egress: String {
        let endpoint = apns?.endpoint ?? fcm?.endpoint ?? "https://api.push.apple.com"
        return proxyConfiguration.route(forURL: endpoint)?.description ?? "direct"
    }

    /// The proxy decision of the relay's HTTP client.
    var proxyConfiguration: HTTPProxyConfiguration {
        var proxies = HTTPProxyConfiguration(httpsProxy: httpsProxy, noProxy: noProxy, environment: proxyEnvironment)
        proxies.settingNames = ("RELAY_HTTPS_PROXY", "RELAY_NO_PROXY")
        return proxies
    }

    /// One line for the start-up message: which platforms are served, and how.
    public var summary: String {
        let ios = apns.map { "APNs \($0.environment.rawValue), topic \($0.credentials.bundleId)" } ?? "off"
        let android = fcm.map { "FCM project \($0.account.projectId), package \($0.packageName)" } ?? "off"
        return "ios: \(ios); android: \(android); egress: \(egress)"
    }
}
