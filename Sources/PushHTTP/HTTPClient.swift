import PushSync
import Synchronization

/// The one HTTP client every transport (relay, APNs, FCM, the OAuth exchange) sends through.
/// Two engines behind one face, chosen per origin:
///
/// - `https` origins that negotiate `h2` by ALPN, and `http` origins with
///   `forceHTTP2PriorKnowledge` (h2c): our HTTP/2 engine on nghttp2's client session over
///   OpenSSL (`H2EventLoop`), one thread, epoll. Connections per origin honour the server's
///   SETTINGS_MAX_CONCURRENT_STREAMS and a new one opens only when the open ones are full;
///   idle connections are probed with PING; a stream refused by GOAWAY or REFUSED_STREAM
///   ends `.streamRefused` (the client resends nothing; the provider layer does, once).
/// - `http` origins (HTTP/1.1, e.g. a relay on a private network) and `https` servers that do
///   not offer `h2`: libcurl's multi interface on a thread of its own (`CurlMultiLoop`).
///
/// Every origin's requests go direct or through one HTTP CONNECT proxy, decided once per
/// origin by `Configuration.proxy` (the environment as curl and Go read it, or settings): the
/// HTTP/2 engine tunnels through `http://` proxies (`ProxyTunnel`), libcurl serves `https://`
/// proxies and its own origins with the same decision.
///
/// TLS peer and host-name verification are always on, with the system trust store plus
/// `Configuration.additionalTrustedCAFile`. Every failure is a typed `HTTPClientError`; a
/// request's timeout counts from submission (waiting for a connection or a stream included).
/// Cancelling the calling task aborts its requests promptly with `.cancelled`.
///
/// `execute(_:deadline:)` is the one request API: an `HTTPClientRequest` carries its origin
/// (parsed once, where it was configured), path, headers, body and address policy, so one
/// client serves every origin under every policy. (`send(_:)` and the batch `send` are
/// adapters kept until their last callers move.)
///
/// Call `shutdown()` when done: it fails what is pending with `.shutdown` and waits until both
/// threads have freed everything. A client released without `shutdown()` still shuts down on
/// its own (without waiting).
package final class HTTPClient: Sendable {
    /// What the client has done so far.
    package struct Statistics: Sendable, Hashable {
        /// Requests handed to an engine's wire (the client sends each once: resending a
        /// refused one is the provider layer's).
        package var requestsSent: Int
        /// HTTP/2 connections of the nghttp2 engine open now.
        package var openHTTP2Connections: Int
        /// Host names the HTTP/2 engine looked up (libcurl and proxies resolve their own).
        package var hostLookups: Int = 0
    }

    /// One request's result in a batch, and how long it took from submission.
    package struct Outcome: Sendable {
        package var result: Result<HTTPResponse, HTTPClientError>
        package var elapsed: Duration
    }

    package let configuration: Configuration
    let curl: CurlMultiLoop
    let h2: H2EventLoop
    let counters = HTTPCounters()
    /// Origins whose TLS handshake chose HTTP/1.1: straight to libcurl from now on.
    private let originsWithoutHTTP2: Locked<Set<HTTPOrigin>>
    /// Each origin's proxy decision, made once (bounded: cleared when full).
    private let proxyRoutes = Locked<[HTTPOrigin: HTTPProxyRoute]>([:])

    /// Starts the client's threads.
    ///
    /// - Throws: `HTTPClientError.invalidConfiguration` for a non-positive timeout or limit,
    ///   an unreadable or non-PEM `additionalTrustedCAFile`, or a libcurl older than 7.85.
    package init(configuration: Configuration = Configuration()) throws(HTTPClientError) {
        let configuration = try configuration.validated()
        self.configuration = configuration
        // Read once: the same bytes feed OpenSSL's store and libcurl's blob.
        let extraCA = try configuration.additionalTrustedCAFile.map { path throws(HTTPClientError) in
            try HTTPTrustRoots.readAdditionalCAFile(path)
        }
        let tls = try TLSClientContext(additionalCAPEM: extraCA)
        curl = try CurlMultiLoop.start(
            settings: CurlMultiLoop.Settings(
                connectTimeout: configuration.connectTimeout,
                maximumResponseBodyBytes: configuration.maximumResponseBodyBytes,
                trustStore: extraCA.map(CurlTrustStore.init(additionalCAPEM:))),
            counters: counters,
            maximumConnectionsPerHost: configuration.maximumConnectionsPerHost,
            maximumConcurrentStreams: configuration.maximumConcurrentStreamsPerConnection,
            maximumCachedConnections: configuration.maximumCachedConnections)
        let learned = Locked(Set<HTTPOrigin>())
        originsWithoutHTTP2 = learned
        do {
            h2 = try H2EventLoop.start(
                settings: H2EventLoop.Settings(
                    connectTimeout: configuration.connectTimeout,
                    maximumResponseBodyBytes: configuration.maximumResponseBodyBytes,
                    maximumConnectionsPerOrigin: max(1, configuration.maximumConnectionsPerHost),
                    maximumConcurrentStreamsPerConnection: configuration.maximumConcurrentStreamsPerConnection,
                    pingInterval: configuration.pingInterval,
                    pingTimeout: configuration.pingTimeout,
                    tls: tls,
                    resolver: HTTPResolver(override: configuration.resolverOverride),
                    // The one place an origin changes engine: later requests skip HTTP/2, and
                    // those it had not started go to libcurl.
                    originLacksHTTP2: { [curl] origin, unstarted in
                        learned.withLock { _ = $0.insert(origin) }
                        for transfer in unstarted { transfer.reroute(to: curl) }
                    }),
                counters: counters)
        } catch {
            curl.beginShutdown()
            throw error
        }
    }

    deinit {
        // Never waits: no send can be in flight once the client is released (send holds it).
        h2.beginShutdown()
        curl.beginShutdown()
    }

    /// Runs `request` and returns the complete response; the one request API. Non-2xx
    /// statuses are responses, not errors. `deadline` bounds the whole exchange: waiting for a
    /// connection or a stream, and the one attempt (nothing is resent here).
    ///
    /// - Throws: `HTTPClientError`; see its static members.
    package func execute(_ request: HTTPClientRequest, deadline: ContinuousClock.Instant) async throws(HTTPClientError) -> HTTPResponse {
        let transfer = try prepare(request, deadline: deadline, batch: nil, index: 0)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: HTTPTransfer.Continuation) in
                transfer.setContinuation(continuation)
                guard transfer.begin() else { return }
                switch transfer.initialEngine {
                case .h2(let loop): if !loop.enqueue(.submit([transfer])) { transfer.submitFailed() }
                case .curl(let loop): if !loop.enqueue(.add(transfer)) { transfer.submitFailed() }
                }
            }
        } onCancel: {
            transfer.cancel()
        }
        return try result.get()
    }

    /// Checks `request`, decides its proxy (once per origin) and its engine.
    private func prepare(
        _ request: HTTPClientRequest, deadline: ContinuousClock.Instant, batch: HTTPBatch?, index: Int
    ) throws(HTTPClientError) -> HTTPTransfer {
        try Self.validate(request)
        var request = request
        // The client's own policy (the old per-client setting) can only tighten a request's.
        if configuration.addressPolicy == .publicOnly { request.addressPolicy = .publicOnly }
        let origin = request.origin
        let proxyRoute: HTTPProxyRoute
        if let known = proxyRoutes.withLock({ $0[origin] }) {
            proxyRoute = known
        } else {
            proxyRoute = configuration.proxy.route(isTLS: origin.isTLS, host: origin.host, port: origin.port)
            proxyRoutes.withLock { routes in
                if routes.count >= HTTPRoute.knownOriginLimit { routes.removeAll(keepingCapacity: true) }
                routes[origin] = proxyRoute
            }
        }
        if case .invalid(let error) = proxyRoute { throw error }
        let proxy = proxyRoute.proxy
        // TLS inside TLS (an https:// proxy) is libcurl's to do.
        let viaH2 =
            (origin.isTLS ? !originsWithoutHTTP2.withLock({ $0.contains(origin) }) : configuration.forceHTTP2PriorKnowledge)
            && proxy?.isTLS != true
        return HTTPTransfer(
            request: request, proxy: proxy, deadline: deadline, batch: batch, index: index, engine: viaH2 ? .h2(h2) : .curl(curl))
    }

    /// Sends `request` and returns the complete response (an adapter over `execute`, until
    /// every caller builds an `HTTPClientRequest`).
    ///
    /// - Throws: `HTTPClientError`; see its static members.
    package func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse {
        let deadline = ContinuousClock.now + (request.timeout ?? configuration.requestTimeout)
        return try await execute(try Self.clientRequest(request), deadline: deadline)
    }

    /// Sends every request at once and returns their outcomes in the same order. Requests to
    /// the same origin share connections; each has its own timeout, counted from now.
    package func send(_ requests: [HTTPRequest]) async -> [Outcome] {
        guard !requests.isEmpty else { return [] }
        let batch = HTTPBatch(count: requests.count, submittedAt: ContinuousClock.now)
        let (started, refused) = transfers(requests, batch: batch)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: HTTPBatch.Continuation) in
                batch.setContinuation(continuation)
                submit(started, refused: refused, batch: batch)
            }
        } onCancel: {
            for transfer in started { transfer.cancel() }
        }
    }

    /// What `start` started: cancelling it ends every request of it not yet ended.
    package struct StartedBatch: Sendable {
        let transfers: [HTTPTransfer]
        package func cancel() { for transfer in transfers { transfer.cancel() } }
    }

    /// Starts every request at once, like `send(_:)`, without waiting for them: `report` hears
    /// each outcome as it ends (with its index in `requests`), exactly once per request, on the
    /// thread that ended it, so a caller can act on each answer while the others are in flight.
    package func start(_ requests: [HTTPRequest], report: @escaping @Sendable (Int, Outcome) -> Void) -> StartedBatch {
        guard !requests.isEmpty else { return StartedBatch(transfers: []) }
        let batch = HTTPBatch(count: requests.count, submittedAt: ContinuousClock.now, report: report)
        let (started, refused) = transfers(requests, batch: batch)
        submit(started, refused: refused, batch: batch)
        return StartedBatch(transfers: started)
    }

    /// Each request's transfer for `batch`, each deadline counted from the batch's submission;
    /// the requests refused before any transfer, with why.
    private func transfers(_ requests: [HTTPRequest], batch: HTTPBatch) -> ([HTTPTransfer], [(Int, HTTPClientError)]) {
        var transfers: [HTTPTransfer] = []
        transfers.reserveCapacity(requests.count)
        var refused: [(Int, HTTPClientError)] = []
        for (index, request) in requests.enumerated() {
            do throws(HTTPClientError) {
                let deadline = batch.submittedAt + (request.timeout ?? configuration.requestTimeout)
                transfers.append(try prepare(try Self.clientRequest(request), deadline: deadline, batch: batch, index: index))
            } catch {
                refused.append((index, error))
            }
        }
        return (transfers, refused)
    }

    /// Hands `transfers` to their engines, one command each; answers the refused at once.
    private func submit(_ transfers: [HTTPTransfer], refused: [(Int, HTTPClientError)], batch: HTTPBatch) {
        for (index, error) in refused { batch.complete(index, .failure(error)) }
        var toH2: [HTTPTransfer] = []
        var toCurl: [HTTPTransfer] = []
        for transfer in transfers where transfer.begin() {
            if case .h2 = transfer.initialEngine { toH2.append(transfer) } else { toCurl.append(transfer) }
        }
        if !toH2.isEmpty, !h2.enqueue(.submit(toH2)) { for transfer in toH2 { transfer.submitFailed() } }
        if !toCurl.isEmpty, !curl.enqueue(toCurl.count == 1 ? .add(toCurl[0]) : .addAll(toCurl)) {
            for transfer in toCurl { transfer.submitFailed() }
        }
    }

    /// An `HTTPRequest`'s origin and path (parsed from its URL unless they were parsed once
    /// before, an endpoint's), with its address policy.
    private static func clientRequest(_ request: HTTPRequest) throws(HTTPClientError) -> HTTPClientRequest {
        let route = try request.route
        return HTTPClientRequest(
            origin: route.origin, method: request.method, path: route.path, headers: request.headers, body: request.body,
            addressPolicy: request.addressPolicy)
    }

    /// Fails pending and in-flight requests with `.shutdown`, stops both threads and frees
    /// every connection and handle; returns once that is done. Idempotent; later `send`s fail
    /// with `.shutdown`.
    package func shutdown() async {
        await h2.shutdown()
        await curl.shutdown()
    }

    /// Where requests to `url` go: direct (and why) or through which proxy (password `***`).
    package func proxyRoute(for url: String) throws(HTTPClientError) -> HTTPProxyRoute {
        let origin = try HTTPRoute.parse(url).origin
        return configuration.proxy.route(isTLS: origin.isTLS, host: origin.host, port: origin.port)
    }

    package var statistics: Statistics {
        Statistics(
            requestsSent: counters.requestsSent.load(ordering: .relaxed),
            openHTTP2Connections: counters.openH2Connections.load(ordering: .relaxed),
            hostLookups: h2.settings.resolver.lookups.load(ordering: .relaxed))
    }

    /// Requests on the wire now: libcurl easy handles plus HTTP/2 streams (for leak tests).
    var liveRequestCount: Int {
        counters.liveEasyHandles.load(ordering: .relaxed) + counters.liveExchanges.load(ordering: .relaxed)
    }

    // MARK: - Validation

    /// Checks what either engine would misread or what would break the framing. Runs for
    /// every request, so each check reads the bytes in place (no closure per byte).
    static func validate(_ request: HTTPClientRequest) throws(HTTPClientError) {
        guard isToken(request.method.rawValue) else {
            throw HTTPClientError(.invalidRequest, detail: "the method is not an HTTP token")
        }
        for field in request.headers {
            guard isToken(field.name) else {
                throw HTTPClientError(.invalidRequest, detail: "a header name is not an HTTP token")
            }
            // The value is never quoted: it may be a credential.
            guard !holdsLineBreakOrNUL(field.value) else {
                throw HTTPClientError(.invalidRequest, detail: "header \(field.name) has a CR, LF or NUL in its value")
            }
        }
        // The path is never quoted either: it may hold a device token or a capability URL.
        guard isPrintablePath(request.path) else {
            throw HTTPClientError(.invalidRequest, detail: "the path must start with / and hold printable ASCII only, no fragment")
        }
    }

    /// RFC 9110 `token`: one or more tchar.
    static func isToken(_ string: String) -> Bool {
        allBytes(of: string, nonEmpty: true) { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
                UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
                UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
                return true
            default:
                return false
            }
        }
    }

    /// A CR, LF or NUL anywhere in `value` (each would end a header early on HTTP/1.1).
    static func holdsLineBreakOrNUL(_ value: String) -> Bool {
        !allBytes(of: value, nonEmpty: false) { $0 != 0x0D && $0 != 0x0A && $0 != 0x00 }
    }

    /// Starts with `/`, then printable ASCII only, no `#`.
    static func isPrintablePath(_ path: String) -> Bool {
        path.utf8.first == UInt8(ascii: "/") && allBytes(of: path, nonEmpty: true) { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }
    }

    /// Whether every byte of `string` passes `test`, read from its contiguous storage when it
    /// has one (native strings do).
    @inline(__always)
    private static func allBytes(of string: String, nonEmpty: Bool, _ test: (UInt8) -> Bool) -> Bool {
        let utf8 = string.utf8
        if nonEmpty, utf8.isEmpty { return false }
        if let answer = utf8.withContiguousStorageIfAvailable({ bytes -> Bool in
            for byte in bytes where !test(byte) { return false }
            return true
        }) {
            return answer
        }
        return utf8.allSatisfy(test)
    }
}
