import CHapiMicrohttpd
import PushHTTP
import PushTransports
import PushSync
import PushPlatform

/// `hapi-push-relay` as a library: the official push relay's HTTP API (`POST /v1/push`,
/// `GET /health`) on libmicrohttpd, forwarding sealed envelopes to APNs and FCM over one
/// shared multiplexed HTTP/2 client, with the spec's abuse limits, one log line per push and
/// optional Prometheus metrics on loopback.
///
/// Start it with `init`, which is listening when it returns; end it with `stop(grace:)`.
public final class PushRelayServer: Sendable {
    public static let serviceName = "hapi-push-relay"
    /// What `GET /health` reports.
    public static let version = "0.1.0"

    public let configuration: PushRelayConfiguration
    /// The port actually bound (the configured one, or the one picked for port 0).
    public let port: Int
    /// `http://HOST:PORT` of the API.
    public let url: String
    /// The port of the metrics listener on 127.0.0.1, when there is one.
    public let metricsPort: Int?

    private let service: RelayService
    private let api: MicroHTTPDaemon
    private let metricsListener: MicroHTTPDaemon?
    private let client: HTTPClient
    private let ownLog: RelayLogWriter?
    /// The Redis limiter this server made from `configuration.redis` (stopped with it).
    private let ownedLimiter: RedisPushRelayRateLimiter?
    private let stopped = Locked(false)

    /// Starts listening (and the metrics listener, when configured) and logs the
    /// `… listening on http://HOST:PORT …` line. With `configuration.redis` (and no
    /// `rateLimiter`), the limits live in that Redis; this does not wait for it to connect
    /// (`start` does, and refuses a Redis that rejects the configuration).
    ///
    /// - Parameters:
    ///   - rateLimiter: the abuse limit; by default the spec's, in Redis when
    ///     `configuration.redis` is set, else in memory.
    ///   - log: where lines go (one per push, plus start and stop); stdout, from a thread of
    ///     its own, by default.
    /// - Throws: `PushRelayStartupError` naming what to fix (a variable, or the address that
    ///   cannot be bound).
    public convenience init(
        configuration: PushRelayConfiguration, rateLimiter: (any PushRelayRateLimiter)? = nil, log: (@Sendable (String) -> Void)? = nil
    ) throws(PushRelayStartupError) {
        let output = try Output(log: log)
        try self.init(configuration: configuration, limiter: Self.limiter(configuration, rateLimiter, output), output: output)
    }

    /// `init`, after the first connection to the rate-limit Redis has been tried (on the
    /// limiter's thread; the caller suspends meanwhile). A Redis that answers and refuses the
    /// configuration (the password, the database, the scripts) or whose certificate fails
    /// verification stops the start with an error naming `RELAY_REDIS_URL`; one that cannot be
    /// reached does not: the relay starts, limits in memory and connects when Redis is up.
    public static func start(
        configuration: PushRelayConfiguration, rateLimiter: (any PushRelayRateLimiter)? = nil, log: (@Sendable (String) -> Void)? = nil
    ) async throws(PushRelayStartupError) -> PushRelayServer {
        let output = try Output(log: log)
        let limiter = limiter(configuration, rateLimiter, output)
        if let redis = limiter.owned, let problem = await redis.firstConnection(), problem.kind == .refused {
            await redis.shutdown()
            await output.own?.close()
            throw PushRelayStartupError("RELAY_REDIS_URL (\(redis.configuration.redactedURL)): \(problem.message)")
        }
        return try PushRelayServer(configuration: configuration, limiter: limiter, output: output)
    }

    /// Where the lines go: the caller's sink, or stdout through a writer of our own.
    private struct Output: Sendable {
        let own: RelayLogWriter?
        let sink: @Sendable (String) -> Void

        init(log: (@Sendable (String) -> Void)?) throws(PushRelayStartupError) {
            let own: RelayLogWriter?
            do {
                own = log == nil ? try RelayLogWriter() : nil
            } catch {
                throw PushRelayStartupError("cannot start the log writer: \(error)")
            }
            self.own = own
            sink = log ?? { line in own?.write(line) }
        }
    }

    /// The limiter to use, and the Redis one when this server made it (and so must stop it).
    private static func limiter(
        _ configuration: PushRelayConfiguration, _ given: (any PushRelayRateLimiter)?, _ output: Output
    ) -> (limiter: any PushRelayRateLimiter, owned: RedisPushRelayRateLimiter?) {
        if let given { return (given, nil) }
        if let redis = configuration.redis {
            let limiter = RedisPushRelayRateLimiter(
                configuration: redis, clientLimit: configuration.clientLimit, deviceLimit: configuration.deviceLimit, log: output.sink)
            return (limiter, limiter)
        }
        return (InMemoryPushRelayRateLimiter(clientLimit: configuration.clientLimit, deviceLimit: configuration.deviceLimit), nil)
    }

    private init(
        configuration: PushRelayConfiguration, limiter: (limiter: any PushRelayRateLimiter, owned: RedisPushRelayRateLimiter?), output: Output
    ) throws(PushRelayStartupError) {
        let ownLog = output.own
        let sink = output.sink
        let owned = limiter.owned
        guard configuration.apns != nil || configuration.fcm != nil else {
            Self.abandon(client: nil, log: ownLog, limiter: owned)
            throw PushRelayStartupError("no provider configured: the relay needs APNs, FCM or both")
        }
        guard let address = RelayBindAddress(host: configuration.host, port: configuration.port) else {
            Self.abandon(client: nil, log: ownLog, limiter: owned)
            throw PushRelayStartupError("RELAY_HOST/RELAY_PORT: cannot bind \(configuration.host):\(configuration.port)")
        }
        let client: HTTPClient
        do {
            client = try HTTPClient(
                configuration: .init(
                    requestTimeout: configuration.providerTimeout, additionalTrustedCAFile: configuration.caFile,
                    proxy: configuration.proxyConfiguration))
        } catch {
            Self.abandon(client: nil, log: ownLog, limiter: owned)
            throw PushRelayStartupError(configuration.caFile != nil ? "RELAY_CA_FILE: \(error)" : "cannot start the HTTP client: \(error)")
        }
        let redisLimiter = owned ?? (limiter.limiter as? RedisPushRelayRateLimiter)
        var redisStatus: (@Sendable () -> PushRelayRedisStatus)?
        if let redisLimiter { redisStatus = { redisLimiter.status } }
        let metrics = RelayMetrics(redisStatus: redisStatus)
        let service = RelayService(
            apns: configuration.apns.map { apns in
                RelayAPNsForwarder(
                    apns: APNsClient(
                        endpoint: apns.endpoint, topic: apns.credentials.bundleId, providerToken: APNsProviderToken(credentials: apns.credentials)),
                    client: client)
            },
            fcm: configuration.fcm.map { fcm in
                RelayFCMForwarder(
                    fcm: FCMClient(
                        endpoint: fcm.endpoint, projectId: fcm.account.projectId,
                        accessTokens: FCMAccessTokenProvider(account: fcm.account, client: client)),
                    packageName: fcm.packageName, client: client)
            },
            limiter: limiter.limiter, trustProxy: configuration.trustProxy,
            providerTimeout: configuration.providerTimeout, version: Self.version, metrics: metrics, log: sink)

        let server = configuration.server
        let api: MicroHTTPDaemon
        do {
            api = try MicroHTTPDaemon(
                settings: .init(
                    address: address, threads: server.threads, connectionLimit: server.connectionLimit,
                    connectionsPerAddress: server.connectionsPerAddress, requestDeadlineSeconds: server.requestDeadlineSeconds,
                    connectionTimeoutSeconds: server.connectionTimeoutSeconds, memoryLimitBytes: server.connectionMemoryLimitBytes,
                    maximumBodyBytes: PushRelayConfiguration.maximumBodyBytes, allowsLaterAnswers: true),
                onHead: { service.head($0) }, onRequest: { service.request($0) })
        } catch {
            Self.abandon(client: client, log: ownLog, limiter: owned)
            throw PushRelayStartupError("RELAY_PORT: \(error.message)")
        }
        var metricsListener: MicroHTTPDaemon?
        if let metricsPort = configuration.metricsPort {
            do {
                metricsListener = try Self.startMetrics(port: metricsPort, metrics: metrics)
            } catch {
                Self.abandon(client: client, log: ownLog, limiter: owned)
                throw PushRelayStartupError("RELAY_METRICS_PORT: \(error.message)")
            }
        }
        self.configuration = configuration
        self.client = client
        self.ownLog = ownLog
        self.ownedLimiter = owned
        self.service = service
        self.api = api
        self.metricsListener = metricsListener
        self.port = api.address.port
        self.url = api.address.url
        self.metricsPort = metricsListener?.address.port
        sink("\(Self.serviceName) \(Self.version) listening on \(url) (\(configuration.summary))")
        if let metricsListener { sink("metrics on \(metricsListener.address.url)/metrics") }
        let perAddress = server.connectionsPerAddress > 0 ? "\(server.connectionsPerAddress) per address" : "no per-address limit"
        sink("connections: at most \(server.connectionLimit) (\(perAddress)); a request within \(server.requestDeadlineSeconds) s for its head and \(server.requestDeadlineSeconds) s for its body; idle ones closed after \(server.connectionTimeoutSeconds) s")
    }

    deinit {
        // Released without stop(): the listeners and the client stop on their own; let the
        // log writer's thread finish too (without waiting for it).
        ownLog?.beginClose()
    }

    /// Stops accepting connections at once, lets pushes in flight finish (at most `grace`;
    /// whatever is still waiting then is answered 502 `upstream`), then closes every
    /// connection, the provider connections and the log. Idempotent.
    ///
    /// - Parameter reason: said in the log (`SIGTERM`).
    public func stop(grace: Duration = .seconds(10), reason: String? = nil) async {
        let first = stopped.withLock { stopped -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        service.log("\(Self.serviceName) stopping" + (reason.map { " (\($0))" } ?? "") + ": no new connections, \(api.openRequests) requests in flight")
        api.quiesce()
        metricsListener?.quiesce()
        let clock = ContinuousClock()
        // Keep a little of the grace for flushing what is answered when it runs out.
        let drainUntil = clock.now + grace * 0.9
        while api.openRequests > 0, clock.now < drainUntil {
            try? await Task.sleep(for: .milliseconds(10))
        }
        api.answerSuspended(with: .upstream)
        let flushUntil = clock.now + grace * 0.1
        while api.openRequests > 0, clock.now < flushUntil {
            try? await Task.sleep(for: .milliseconds(10))
        }
        for listener in [api, metricsListener].compactMap({ $0 }) {
            do {
                try await listener.stop()
            } catch {
                // Never stopped on this task instead (it blocks): it stops when released.
                service.log("\(Self.serviceName): \(error); the listener stops when the server is released")
            }
        }
        await client.shutdown()
        await ownedLimiter?.shutdown()
        service.log("\(Self.serviceName) stopped")
        await ownLog?.close()
    }

    /// Raises the process's soft file-descriptor limit (`RLIMIT_NOFILE`) to its hard limit, so
    /// `PushRelayConfiguration.Server.defaultConnectionLimit` can be as large as the system
    /// allows. For the relay's own executable, at start-up; a host embedding the relay decides
    /// for itself. Returns the soft limit now in force (nil if unknown).
    @discardableResult
    public static func raiseDescriptorLimit() -> Int? {
        Platform.raiseDescriptorLimit()
    }

    /// Connections closed for missing the request deadline, and idle ones closed to make room
    /// near the connection limit, since the start.
    public var guardedClosures: (deadline: Int, idle: Int) { api.connectionGuard?.closedCounts ?? (0, 0) }

    /// Connections closed to make room under the per-address limit (`evicted`: ones that had
    /// not completed their request), and new ones closed because their address had only
    /// complete or busy connections (`refused`), since the start.
    public var addressClosures: (evicted: Int, refused: Int) { api.connectionGuard?.addressCounts ?? (0, 0) }

    /// Whether the HTTP server waits with poll(2), as libmicrohttpd reports it.
    var waitsWithPoll: Bool { api.waitsWithPoll }

    /// The Prometheus text of the counters right now (what `/metrics` serves).
    public var metricsText: String { service.metrics.render() }

    private static func startMetrics(port: Int, metrics: RelayMetrics) throws(RelayListenError) -> MicroHTTPDaemon {
        guard let address = RelayBindAddress(host: "127.0.0.1", port: port) else {
            throw RelayListenError(message: "not a port: \(port)")
        }
        let text = "text/plain; version=0.0.4; charset=utf-8"
        return try MicroHTTPDaemon(
            settings: .init(
                address: address, threads: 1, connectionLimit: 16, connectionTimeoutSeconds: 10, memoryLimitBytes: 16 * 1024,
                maximumBodyBytes: 0, allowsLaterAnswers: false),
            onHead: { head in
                guard head.path == "/metrics" else { return .answer(.notFound) }
                guard head.method == "GET" else { return .answer(.methodNotAllowed) }
                return .answer(RelayHTTPAnswer(status: 200, contentType: text, body: Array(metrics.render().utf8), outcome: "ok"))
            },
            onRequest: { _ in .answer(.notFound) })
    }

    /// Releases what a failed start had already set up (without waiting for it).
    private static func abandon(client: HTTPClient?, log: RelayLogWriter?, limiter: RedisPushRelayRateLimiter?) {
        Task {
            await client?.shutdown()
            await limiter?.shutdown()
            await log?.close()
        }
    }
}
