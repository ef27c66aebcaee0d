import Foundation
import PushLoopbackServer
import PushSync
import Testing
import PushPlatform

@testable import PushHTTP

// Every test talks to the real loopback server (nghttp2 + OpenSSL) over real sockets, and
// trusts its throwaway CA through `additionalTrustedCAFile`: verification is never turned off.
// Serialized: the leak checks count this process's file descriptors, and timing assertions
// should not compete with 1,000-request bursts for the CPU.
@Suite(.serialized) struct HTTPClientTests {

    // MARK: - Round trips

    @Test func getAndPostOverHTTP2TLS() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Self.echo)
        defer { server.stop() }
        let client = try HTTPClient(configuration: Self.trusting(server))

        let get = try await client.send(HTTPRequest(url: server.baseURL + "/hello?x=1"))
        #expect(get.status == 200)
        #expect(get.httpVersion == .http2)
        #expect(get.headers.first(name: "x-method") == "GET")
        #expect(get.headers.first(name: "x-path") == "/hello?x=1")
        #expect(get.headers.first(name: "X-HTTP-Version") == "2")  // lookups ignore case
        #expect(get.headers.allSatisfy { $0.name == $0.name.lowercased() })
        #expect(get.body.isEmpty)

        let payload = Array(#"{"to":"device","n":1}"#.utf8)
        let post = try await client.send(
            HTTPRequest(
                method: .post, url: server.baseURL + "/3/device/abc",
                headers: ["Content-Type": "application/json", "authorization": "bearer x"], body: payload))
        #expect(post.status == 200)
        #expect(post.httpVersion == .http2)
        #expect(post.body == payload)
        #expect(post.headers.first(name: "x-method") == "POST")
        #expect(post.headers.first(name: "x-content-type") == "application/json")
        #expect(post.headers.first(name: "x-authorization") == "bearer x")
        #expect(post.headers.first(name: "x-expect") == nil)  // never 100-continue

        // Both went over the one connection.
        #expect(server.connectionsAccepted == 1)
        #expect(client.statistics.requestsSent == 2)
        await client.shutdown()
    }

    @Test func getAndPostOverH2CWithPriorKnowledge() async throws {
        let server = try LoopbackServer(transport: .cleartext, handler: Self.echo)
        defer { server.stop() }
        let client = try HTTPClient(configuration: .init(forceHTTP2PriorKnowledge: true))

        let get = try await client.send(HTTPRequest(url: server.baseURL + "/h2c"))
        #expect(get.status == 200)
        #expect(get.httpVersion == .http2)
        #expect(get.headers.first(name: "x-http-version") == "2")

        let post = try await client.send(HTTPRequest(method: .post, url: server.baseURL + "/h2c", body: [1, 2, 3]))
        #expect(post.body == [1, 2, 3])
        #expect(post.httpVersion == .http2)

        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for id in 0..<20 {
                group.addTask { try await client.send(HTTPRequest(url: server.baseURL + "/h2c/\(id)")).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 20))
        // libcurl < 8.0 cannot reuse an h2c connection (curl #10634): one per request there.
        #expect(server.connectionsAccepted <= 22)
        await client.shutdown()
    }

    @Test func getAndPostOverHTTP1() async throws {
        let server = try LoopbackServer(transport: .cleartext, handler: Self.echo)
        defer { server.stop() }
        let client = try HTTPClient()

        let get = try await client.send(HTTPRequest(url: server.baseURL + "/one"))
        #expect(get.status == 200)
        #expect(get.httpVersion == .http1_1)
        #expect(get.headers.first(name: "x-http-version") == "1")

        let body = Array(repeating: UInt8(ascii: "z"), count: 10_000)
        let post = try await client.send(HTTPRequest(method: .post, url: server.baseURL + "/one", body: body))
        #expect(post.body == body)
        #expect(post.headers.first(name: "x-expect") == nil)
        #expect(post.headers.first(name: "x-content-type") == nil)  // not form-urlencoded
        #expect(server.connectionsAccepted == 1)  // kept alive and reused
        await client.shutdown()
    }

    @Test func methodsStatusesAndEmptyHeaderValues() async throws {
        let server = try LoopbackServer(transport: .tls) { request in
            var response = Self.echo(request)
            if request.path == "/gone" { response.status = 410 }
            if request.path == "/big-head" {
                response = LoopbackServer.Response(status: 200).adding(header: "content-length", "\(8 << 20)")
            }
            return response
        }
        defer { server.stop() }
        let client = try HTTPClient(configuration: Self.trusting(server))

        for method in [HTTPRequest.Method.put, .patch, .delete, .options] {
            let response = try await client.send(HTTPRequest(method: method, url: server.baseURL + "/m", body: [7]))
            #expect(response.headers.first(name: "x-method") == method.rawValue)
            #expect(response.body == [7])
        }
        let delete = try await client.send(HTTPRequest(method: .delete, url: server.baseURL + "/m"))
        #expect(delete.headers.first(name: "x-method") == "DELETE")
        let head = try await client.send(HTTPRequest(method: .head, url: server.baseURL + "/m"))
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        // A HEAD's content-length may exceed the body limit: no body follows.
        let bigHead = try await client.send(HTTPRequest(method: .head, url: server.baseURL + "/big-head"))
        #expect(bigHead.status == 200)

        // A non-2xx status is a response, not an error.
        let gone = try await client.send(HTTPRequest(url: server.baseURL + "/gone"))
        #expect(gone.status == 410)

        // An empty value is sent as such, not dropped.
        let empty = try await client.send(
            HTTPRequest(url: server.baseURL + "/e", headers: ["x-request-id": ""]))
        #expect(empty.headers.contains(name: "x-request-id"))
        await client.shutdown()
    }

    // MARK: - Multiplexing

    @Test func thousandConcurrentRequestsShareOneTLSConnection() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Self.echo)
        defer { server.stop() }
        var configuration = Self.trusting(server)
        configuration.maximumConnectionsPerHost = 1
        let client = try HTTPClient(configuration: configuration)

        let started = ContinuousClock.now
        let mismatches = try await withThrowingTaskGroup(of: Bool.self) { group in
            for id in 0..<1_000 {
                group.addTask {
                    let response = try await client.send(
                        HTTPRequest(
                            method: .post, url: server.baseURL + "/burst/\(id)", headers: ["x-request-id": "\(id)"],
                            body: Array("payload-\(id)".utf8)))
                    return response.status == 200 && response.headers.first(name: "x-request-id") == "\(id)"
                        && response.body == Array("payload-\(id)".utf8)
                        && response.headers.first(name: "x-path") == "/burst/\(id)"
                }
            }
            var mismatches = 0
            for try await matched in group where !matched { mismatches += 1 }
            return mismatches
        }
        let elapsed = started.duration(to: .now)
        print("1,000 concurrent requests over one h2 connection: \(elapsed)")
        #expect(mismatches == 0)
        #expect(server.connectionsAccepted == 1)
        #expect(server.requestsHandled == 1_000)
        #expect(client.liveRequestCount == 0)
        await client.shutdown()
    }

    @Test func requestsBeyondTheLimitsWaitInOrderAndSucceed() async throws {
        let order = Locked<[String]>([])
        let server = try LoopbackServer(transport: .tls) { request in
            order.withLock { $0.append(request.path) }
            return Self.echo(request).delayed(milliseconds: 10)
        }
        defer { server.stop() }
        var configuration = Self.trusting(server)
        configuration.maximumConnectionsPerHost = 1
        configuration.maximumConcurrentStreamsPerConnection = 1
        let client = try HTTPClient(configuration: configuration)
        _ = try await client.send(HTTPRequest(url: server.baseURL + "/warm-up"))

        var tasks: [Task<Int, any Error>] = []
        for id in 0..<15 {
            tasks.append(Task { try await client.send(HTTPRequest(url: server.baseURL + "/q/\(id)")).status })
            // Hand each to the loop before the next, so the submission order is known.
            try await Self.waitUntil { client.statistics.requestsSent == id + 2 }
        }
        for task in tasks {
            #expect(try await task.value == 200)
        }
        #expect(order.withLock { $0 } == ["/warm-up"] + (0..<15).map { "/q/\($0)" })
        #expect(server.connectionsAccepted == 1)
        await client.shutdown()
    }

    // MARK: - TLS

    @Test func serverWithUntrustedCAFailsWithTLSFailure() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Self.echo)
        defer { server.stop() }
        let other = try LoopbackServer(transport: .tls, handler: Self.echo)
        defer { other.stop() }

        // System trust only: the throwaway CA is not in it.
        let systemOnly = try HTTPClient()
        let first = await systemOnly.result(HTTPRequest(url: server.baseURL + "/"))
        #expect(first.failure == .tlsFailure)
        #expect(first.failure?.detail?.contains("certificate verification failed") == true)
        await systemOnly.shutdown()

        // Trusting another server's CA does not make this one trusted.
        let wrongCA = try HTTPClient(configuration: Self.trusting(other))
        let second = await wrongCA.result(HTTPRequest(url: server.baseURL + "/"))
        #expect(second.failure == .tlsFailure)
        // ...and the same client still reaches the server it does trust.
        #expect(try await wrongCA.send(HTTPRequest(url: other.baseURL + "/")).status == 200)
        await wrongCA.shutdown()
        #expect(server.requestsHandled == 0)
    }

    @Test func additionalCAIsAddedToTheSystemStoreNotSubstituted() throws {
        let server = try LoopbackServer(transport: .tls, handler: Self.echo)
        defer { server.stop() }
        let caPath = try #require(server.caCertificatePath)
        let extra = try #require(HTTPTrustRoots.readFile(caPath, limit: 1 << 20))
        let systemPath = try #require(CurlTrustStore.systemBundlePath())
        let system = try #require(HTTPTrustRoots.readFile(systemPath, limit: 8 << 20))
        let store = CurlTrustStore(additionalCAPEM: try HTTPTrustRoots.readAdditionalCAFile(caPath))
        #expect(store.byteCount == system.count + extra.count + 2)
    }

    /// libcurl's bundle is made at its first use: a system bundle that cannot be read then is
    /// read again next time instead of being left out for the client's life.
    @Test func aSystemBundleThatCouldNotBeReadIsReadAgainAtTheNextTransfer() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-bundle-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("ca-certificates.crt")
        let extra = Array("-----BEGIN CERTIFICATE-----\nextra\n-----END CERTIFICATE-----\n".utf8)
        let store = CurlTrustStore(additionalCAPEM: extra, systemBundlePath: bundle.path)
        #expect(store.byteCount == extra.count + 1)  // not there yet: the extra CA alone, this time
        #expect(!store.isBuilt)
        let system = Array("-----BEGIN CERTIFICATE-----\nsystem\n-----END CERTIFICATE-----\n".utf8)
        try Data(system).write(to: bundle)
        #expect(store.byteCount == system.count + extra.count + 2)
        #expect(store.isBuilt)
        try FileManager.default.removeItem(at: bundle)
        #expect(store.byteCount == system.count + extra.count + 2)  // built whole: kept

        // A bundle that never becomes readable: after a few tries the extra CA alone is kept.
        let never = CurlTrustStore(additionalCAPEM: extra, systemBundlePath: directory.appendingPathComponent("absent").path)
        for _ in 0...CurlTrustStore.maximumRetries { #expect(never.byteCount == extra.count + 1) }
        #expect(never.isBuilt)
    }

    @Test func unusableCAFileIsRejectedAtInit() throws {
        #expect(throws: HTTPClientError.invalidConfiguration) {
            try HTTPClient(configuration: .init(additionalTrustedCAFile: "/nonexistent/ca.pem"))
        }
        #expect(throws: HTTPClientError.invalidConfiguration) {
            try HTTPClient(configuration: .init(additionalTrustedCAFile: "/proc/self/stat"))  // not PEM
        }
        #expect(throws: HTTPClientError.invalidConfiguration) {
            try HTTPClient(configuration: .init(requestTimeout: .zero))
        }
    }

    // MARK: - Timeouts and cancellation

    @Test func silentServerTimesOutWithinTheRequestTimeout() async throws {
        let server = try LoopbackServer(transport: .tls, silent: true, handler: Self.echo)
        defer { server.stop() }
        let client = try HTTPClient(configuration: Self.trusting(server))  // 10 s default

        let started = ContinuousClock.now
        let result = await client.result(HTTPRequest(url: server.baseURL + "/", timeout: .milliseconds(500)))
        let elapsed = started.duration(to: .now)
        #expect(result.failure == .timeout)
        #expect(elapsed >= .milliseconds(450))
        #expect(elapsed < .milliseconds(1_500))
        await client.shutdown()
    }

    @Test func unansweredStreamTimesOut() async throws {
        let server = try LoopbackServer(transport: .tls) { _ in .action(.neverRespond) }
        defer { server.stop() }
        var configuration = Self.trusting(server)
        configuration.requestTimeout = .milliseconds(300)
        let client = try HTTPClient(configuration: configuration)
        let result = await client.result(HTTPRequest(url: server.baseURL + "/"))
        #expect(result.failure == .timeout)
        // The stream is reset; it is freed once the RST_STREAM is written.
        try await Self.waitUntil { client.liveRequestCount == 0 }
        await client.shutdown()
    }

    @Test func cancellationAbortsPromptlyAndTheClientKeepsWorking() async throws {
        let server = try LoopbackServer(transport: .tls) { request in
            request.path == "/never" ? .action(.neverRespond) : Self.echo(request)
        }
        defer { server.stop() }
        let client = try HTTPClient(configuration: Self.trusting(server))

        let task = Task { await client.result(HTTPRequest(url: server.baseURL + "/never")) }
        try await Self.waitUntil { server.requestsHandled >= 1 }  // the stream is open
        #expect(client.liveRequestCount == 1)
        let started = ContinuousClock.now
        task.cancel()
        let result = await task.value
        let elapsed = started.duration(to: .now)
        #expect(result.failure == .cancelled)
        #expect(elapsed < .seconds(1))
        // The stream is reset; it is freed once the RST_STREAM is written.
        try await Self.waitUntil { client.liveRequestCount == 0 }

        // Same client, same connection (the cancelled stream was reset, not the connection).
        let next = try await client.send(HTTPRequest(url: server.baseURL + "/after"))
        #expect(next.status == 200)
        #expect(server.connectionsAccepted == 1)

        // A task cancelled before it sends fails at once, without touching the network.
        let handled = server.requestsHandled
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await client.result(HTTPRequest(url: server.baseURL + "/early"))
        }
        #expect(await early.value.failure == .cancelled)
        #expect(server.requestsHandled == handled)
        await client.shutdown()
    }

    // MARK: - Refused streams

    @Test func goawayMidFlightIsReportedRefusedAndTheResendTakesANewConnection() async throws {
        let server = try LoopbackServer(transport: .tls) { request in
            request.connectionID == 1 ? .action(.goaway()) : Self.echo(request)
        }
        defer { server.stop() }
        let client = try HTTPClient(configuration: Self.trusting(server))
        let request = HTTPRequest(method: .post, url: server.baseURL + "/g", body: [42])

        // The client sends once: a stream above the GOAWAY's last stream id is refused, unprocessed.
        #expect(await client.result(request).failure == .streamRefused)
        #expect(server.connectionsAccepted == 1)
        let response = try await client.send(request)
        #expect(response.status == 200)
        #expect(response.body == [42])
        #expect(response.headers.first(name: "x-connection") == "2")
        #expect(server.connectionsAccepted == 2)
        #expect(client.statistics.requestsSent == 2)
        await client.shutdown()
    }

    @Test func goawayWithManyStreamsInFlightRefusesThemAndEachResendIsAnswered() async throws {
        let server = try LoopbackServer(transport: .tls) { request in
            request.connectionID == 1 ? .action(.goaway(), delayMilliseconds: 50) : Self.echo(request)
        }
        defer { server.stop() }
        var configuration = Self.trusting(server)
        configuration.maximumConnectionsPerHost = 1
        let client = try HTTPClient(configuration: configuration)

        // Every stream on connection 1 is answered with GOAWAY: each is refused unprocessed (or
        // answered, if it arrived after the GOAWAY and rode connection 2). A resend of each
        // refused one is answered on connection 2.
        let statuses = await withTaskGroup(of: Int.self) { group in
            for id in 0..<50 {
                group.addTask {
                    let request = HTTPRequest(url: server.baseURL + "/g/\(id)")
                    switch await client.result(request) {
                    case .success(let response): return response.status
                    case .failure(let error):
                        guard error == .streamRefused else { return -1 }
                        return (try? await client.send(request).status) ?? -2
                    }
                }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 50))
        #expect(server.connectionsAccepted == 2)
        await client.shutdown()
    }

    @Test func goawayOnEveryConnectionIsReportedRefusedAfterOneTry() async throws {
        let server = try LoopbackServer(transport: .tls) { _ in .action(.goaway()) }
        defer { server.stop() }
        let client = try HTTPClient(configuration: Self.trusting(server))
        let result = await client.result(HTTPRequest(url: server.baseURL + "/"))
        #expect(result.failure == .streamRefused)
        #expect(server.connectionsAccepted == 1)  // one try: the client resends nothing
        #expect(client.statistics.requestsSent == 1)
        await client.shutdown()
    }

    @Test func aRefusedStreamIsReportedAndItsResendReusesTheConnection() async throws {
        let count = Locked(0)
        let server = try LoopbackServer(transport: .tls) { request in
            let n = count.withLock {
                $0 += 1
                return $0
            }
            return n == 1 ? .action(.resetStream(errorCode: 7)) : Self.echo(request)
        }
        defer { server.stop() }
        let client = try HTTPClient(configuration: Self.trusting(server))
        let request = HTTPRequest(method: .post, url: server.baseURL + "/r", body: [9])
        #expect(await client.result(request).failure == .streamRefused)
        let response = try await client.send(request)
        #expect(response.status == 200)
        #expect(response.body == [9])
        #expect(server.requestsHandled == 2)  // refused once, then processed
        // REFUSED_STREAM refuses a stream, not the connection: the resend reuses it.
        #expect(server.connectionsAccepted == 1)
        await client.shutdown()
    }

    // MARK: - Broken exchanges

    @Test func connectionDroppedMidBodyIsConnectionLost() async throws {
        let server = try LoopbackServer(transport: .tls) { _ in
            LoopbackServer.Response(body: Array(repeating: 0x41, count: 10_000), action: .partialThenDrop(bytes: 100))
        }
        defer { server.stop() }
        let client = try HTTPClient(configuration: Self.trusting(server))
        let result = await client.result(HTTPRequest(url: server.baseURL + "/partial"))
        #expect(result.failure == .connectionLost)  // it may have been processed: never "refused"
        await client.shutdown()
    }

    @Test func streamResetWithAnErrorIsConnectionLost() async throws {
        let server = try LoopbackServer(transport: .tls) { _ in .action(.resetStream(errorCode: 2)) }
        defer { server.stop() }
        let client = try HTTPClient(configuration: Self.trusting(server))
        let result = await client.result(HTTPRequest(url: server.baseURL + "/"))
        #expect(result.failure == .connectionLost)
        #expect(result.failure?.detail?.contains("INTERNAL_ERROR") == true)
        await client.shutdown()
    }

    @Test func nothingListeningIsConnectionRefused() async throws {
        let (socket, port) = try Self.boundButNotListening()
        defer { close(socket) }
        let client = try HTTPClient()
        let result = await client.result(HTTPRequest(url: "https://127.0.0.1:\(port)/"))
        #expect(result.failure == .connectionRefused)
        let plain = await client.result(HTTPRequest(url: "http://127.0.0.1:\(port)/"))
        #expect(plain.failure == .connectionRefused)
        await client.shutdown()
    }

    @Test func unresolvableHostIsDNSFailure() async throws {
        let client = try HTTPClient()
        // .invalid never resolves (RFC 6761).
        let result = await client.result(HTTPRequest(url: "https://hapi-push-test.invalid/", timeout: .seconds(5)))
        #expect(result.failure == .dnsFailure)
        await client.shutdown()
    }

    // MARK: - Bounded responses

    @Test func oversizedBodyIsResponseTooLarge() async throws {
        let big = Array(repeating: UInt8(0x62), count: 8 << 20)
        let server = try LoopbackServer(transport: .tls) { request in
            switch request.path {
            case "/big": LoopbackServer.Response(body: big)
            case "/endless": .action(.endlessBody)
            case "/exact": LoopbackServer.Response(body: Array(big[..<(1 << 20)]))
            default: LoopbackServer.Response(body: Array(big[..<((1 << 20) + 1)]))
            }
        }
        defer { server.stop() }
        let client = try HTTPClient(configuration: Self.trusting(server))  // 1 MiB default

        #expect(await client.result(HTTPRequest(url: server.baseURL + "/big")).failure == .responseTooLarge)
        // No content-length: the write callback stops it.
        #expect(await client.result(HTTPRequest(url: server.baseURL + "/endless")).failure == .responseTooLarge)
        #expect(await client.result(HTTPRequest(url: server.baseURL + "/over")).failure == .responseTooLarge)
        let exact = try await client.send(HTTPRequest(url: server.baseURL + "/exact"))
        #expect(exact.body.count == 1 << 20)
        #expect(client.liveRequestCount == 0)
        await client.shutdown()
    }

    // MARK: - Requests

    @Test func malformedRequestsAreRejectedBeforeAnyIO() async throws {
        let client = try HTTPClient()
        let bad: [HTTPRequest] = [
            HTTPRequest(url: "not a url"),
            HTTPRequest(url: "/relative/path"),
            HTTPRequest(url: "ftp://example.com/file"),
            HTTPRequest(url: "file:///etc/passwd"),
            HTTPRequest(url: "https://example.com/\u{0}x"),
            HTTPRequest(url: "https://example.com/", headers: ["x-injected": "a\r\nhost: evil"]),
            HTTPRequest(url: "https://example.com/", headers: ["bad name": "v"]),
            HTTPRequest(url: "https://example.com/", headers: ["": "v"]),
            HTTPRequest(method: .init("GET /x"), url: "https://example.com/"),
        ]
        for request in bad {
            #expect(await client.result(request).failure == .invalidRequest, "\(request)")
        }
        #expect(client.statistics.requestsSent == 0)
        await client.shutdown()
    }

    @Test func descriptionsNeverCarryCredentialsOrPaths() async throws {
        let (socket, port) = try Self.boundButNotListening()
        defer { close(socket) }
        let client = try HTTPClient()
        let request = HTTPRequest(
            method: .post, url: "https://user:pw@127.0.0.1:\(port)/3/device/DEVICETOKEN123?key=QUERYSECRET",
            headers: ["authorization": "bearer JWT.SECRET.SIG"], body: Array("BODYSECRET".utf8))
        let error = try #require(await client.result(request).failure)
        let injected = try #require(
            await client.result(HTTPRequest(url: "https://127.0.0.1/", headers: ["x": "HEADERSECRET\n"])).failure)
        for text in [
            error.description, String(reflecting: error), injected.description, request.description,
            String(reflecting: request), request.headers.description,
        ] {
            for secret in ["JWT.SECRET", "BODYSECRET", "DEVICETOKEN123", "QUERYSECRET", "pw@", "HEADERSECRET"] {
                #expect(!text.contains(secret), "\(text)")
            }
        }
        #expect(request.description.contains("127.0.0.1:\(port)"))
        await client.shutdown()
    }

    // MARK: - Shutdown

    @Test func shutdownFailsPendingAndInFlightRequests() async throws {
        let server = try LoopbackServer(transport: .tls) { _ in .action(.neverRespond) }
        defer { server.stop() }
        var configuration = Self.trusting(server)
        configuration.maximumConnectionsPerHost = 1
        configuration.maximumConcurrentStreamsPerConnection = 2  // 2 on the wire, 4 waiting in the engine
        let client = try HTTPClient(configuration: configuration)

        let tasks = (0..<6).map { id in
            Task { await client.result(HTTPRequest(url: server.baseURL + "/wait/\(id)")) }
        }
        try await Self.waitUntil { server.requestsHandled >= 2 && client.liveRequestCount == 2 }
        let started = ContinuousClock.now
        await client.shutdown()
        #expect(started.duration(to: .now) < .seconds(1))
        for task in tasks {
            #expect(await task.value.failure == .shutdown)
        }
        #expect(client.liveRequestCount == 0)
        #expect(await client.result(HTTPRequest(url: server.baseURL + "/late")).failure == .shutdown)
        await client.shutdown()  // idempotent
        #expect(server.requestsHandled == 2)
    }

    @Test func releasingTheClientWithoutShutdownStopsItsThread() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Self.echo)
        defer { server.stop() }
        weak var loop: CurlMultiLoop?
        weak var h2: H2EventLoop?
        do {
            let client = try HTTPClient(configuration: Self.trusting(server))
            #expect(try await client.send(HTTPRequest(url: server.baseURL + "/")).status == 200)
            loop = client.curl
            h2 = client.h2
        }
        // Each thread holds its loop until it has cleaned up and exited.
        try await Self.waitUntil { loop == nil && h2 == nil }
        try await Self.waitUntil { server.openConnections == 0 }
    }

    // MARK: - Soak

    @Test func twentyThousandRequestsLeakNothing() async throws {
        let fdsAtStart = Self.openFileDescriptors()
        let server = try LoopbackServer(transport: .tls, handler: Self.echo)
        let client = try HTTPClient(configuration: Self.trusting(server))
        _ = try await client.send(HTTPRequest(url: server.baseURL + "/warm-up"))
        let fdsWarm = Self.openFileDescriptors()

        let total = 20_000
        let window = 100
        let started = ContinuousClock.now
        let failures = try await Self.sendAll(total, window: window, with: client, to: server.baseURL + "/soak")
        let elapsed = started.duration(to: .now)
        let fdsAfter = Self.openFileDescriptors()
        print(
            "soak: \(total) POSTs, \(window) at a time, in \(elapsed); connections accepted \(server.connectionsAccepted), fds \(fdsAtStart) -> \(fdsWarm) -> \(fdsAfter)"
        )
        #expect(failures == 0)
        #expect(server.requestsHandled == total + 1)
        #expect(client.statistics.requestsSent == total + 1)
        #expect(client.liveRequestCount == 0)
        #expect(server.connectionsAccepted == 1)
        #expect(server.openConnections == 1)
        // Slack for other suites running in the same process; a per-request leak would be thousands.
        #expect(fdsAfter <= fdsWarm + 16)

        await client.shutdown()
        server.stop()
        #expect(Self.openFileDescriptors() <= fdsAtStart + 16)
    }

    /// libcurl 7.88 sends RST_STREAM after every response that has no content-length; an
    /// nghttp2 server with the rapid-reset mitigation (1.57+, or Debian's patched 1.52) answers
    /// the 1,001st with GOAWAY(INTERNAL_ERROR). The client must ride through it.
    @Test func serverResetRateLimitGoawaysAreSurvived() async throws {
        let server = try LoopbackServer(transport: .tls) { request in
            LoopbackServer.Response(status: 200, body: request.body)  // no content-length
        }
        defer { server.stop() }
        let client = try HTTPClient(configuration: Self.trusting(server))
        let total = 2_500
        let failures = try await Self.sendAll(total, window: 100, with: client, to: server.baseURL + "/rst")
        print(
            "reset-rate GOAWAYs: \(total) requests, \(server.connectionsAccepted) connections, \(server.requestsHandled) handled"
        )
        #expect(failures == 0)
        #expect(server.requestsHandled >= total)  // libcurl may resend a request it lost with its connection
        #expect(client.liveRequestCount == 0)
        // libcurl 7.88 may keep a sent-away connection cached until it prunes it; the cache is
        // bounded, and shutdown closes everything.
        #expect(server.openConnections <= HTTPClient.Configuration().maximumCachedConnections + 1)
        await client.shutdown()
        try await Self.waitUntil { server.openConnections == 0 }
    }

    // MARK: - Helpers

    /// Sends `total` POSTs echoing their body, `window` at a time; returns how many failed.
    static func sendAll(_ total: Int, window: Int, with client: HTTPClient, to url: String) async throws -> Int {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            func post(_ id: Int) -> @Sendable () async throws -> Bool {
                {
                    let body = Array("request-\(id)".utf8)
                    let response = try await client.send(HTTPRequest(method: .post, url: url, body: body))
                    return response.status == 200 && response.body == body
                }
            }
            var next = 0
            while next < min(window, total) {
                group.addTask(operation: post(next))
                next += 1
            }
            var failures = 0
            while let ok = try await group.next() {
                if !ok { failures += 1 }
                if next < total {
                    group.addTask(operation: post(next))
                    next += 1
                }
            }
            return failures
        }
    }

    static func trusting(_ server: LoopbackServer) -> HTTPClient.Configuration {
        HTTPClient.Configuration(additionalTrustedCAFile: server.caCertificatePath)
    }

    /// Echoes the body and reports what the server saw in `x-` headers. Over HTTP/2 it sends a
    /// content-length, as real servers do (see `serverResetRateLimitGoawaysAreSurvived`).
    @Sendable static func echo(_ request: LoopbackServer.Request) -> LoopbackServer.Response {
        var response = LoopbackServer.Response(status: 200, body: request.body)
            .adding(header: "x-method", request.method)
            .adding(header: "x-path", request.path)
            .adding(header: "x-http-version", "\(request.httpVersion)")
            .adding(header: "x-connection", "\(request.connectionID)")
        if request.httpVersion == 2 {
            response = response.adding(header: "content-length", "\(request.body.count)")
        }
        for name in ["x-request-id", "content-type", "authorization", "expect"] {
            if let value = request.header(name) {
                response = response.adding(header: name.hasPrefix("x-") ? name : "x-\(name)", value)
            }
        }
        return response
    }

    static func waitUntil(
        timeout: Duration = .seconds(5), _ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("condition not met within \(timeout)", sourceLocation: sourceLocation)
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    static func openFileDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// A TCP port on 127.0.0.1 that refuses connections: bound (so nobody else takes it) but
    /// not listening.
    static func boundButNotListening() throws -> (Int32, Int) {
        let fd = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false, closeOnExec: false)
        try #require(fd >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        try #require(bound)
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}

extension HTTPClient {
    /// `send`, as a value.
    func result(_ request: HTTPRequest) async -> Result<HTTPResponse, HTTPClientError> {
        do throws(HTTPClientError) {
            return .success(try await send(request))
        } catch {
            return .failure(error)
        }
    }
}

extension Result where Failure == HTTPClientError {
    var failure: HTTPClientError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// The transfer lifecycle without I/O.
@Suite struct HTTPTransferStateMachineTests {
    typealias Machine = HTTPTransferStateMachine

    @Test func successRunsOnce() {
        var machine = Machine()
        #expect(machine.start() == .submit)
        #expect(machine.willStartAttempt() == .start)
        #expect(machine.completed(.success(())) == .succeed)
        #expect(machine.state == .finished)
        // Nothing resumes twice.
        #expect(machine.completed(.success(())) == .drop)
        #expect(machine.aborted() == false)
        #expect(machine.cancel() == .none)
    }

    @Test func theClientRetriesNothingNotEvenARefusedStream() {
        // The provider layer resends a refused stream (ProviderCall, RelayExchange): one layer.
        for error in [HTTPClientError.streamRefused, .connectionLost, .timeout, .tlsFailure, .responseTooLarge, .connectionRefused] {
            var machine = Machine()
            _ = machine.start()
            _ = machine.willStartAttempt()
            #expect(machine.completed(.failure(error)) == .fail(error))
        }
    }

    @Test func cancelBeforeStartFailsTheStart() {
        var machine = Machine()
        #expect(machine.cancel() == .none)
        #expect(machine.start() == .fail(.cancelled))
        #expect(machine.state == .finished)
    }

    @Test func cancelWhileQueuedNeverReachesTheMultiHandle() {
        var machine = Machine()
        _ = machine.start()
        #expect(machine.cancel() == .abort)
        #expect(machine.willStartAttempt() == .fail(.cancelled))
        #expect(machine.aborted() == false)  // the later cancel command finds nothing to resume
    }

    @Test func cancelWhileRunning() {
        var machine = Machine()
        _ = machine.start()
        _ = machine.willStartAttempt()
        #expect(machine.cancel() == .abort)
        #expect(machine.cancel() == .none)
        #expect(machine.aborted() == true)
        #expect(machine.completed(.success(())) == .drop)
    }

    @Test func completionRacingACancel() {
        // The response arrived before the loop processed the cancel: it is delivered.
        var answered = Machine()
        _ = answered.start()
        _ = answered.willStartAttempt()
        _ = answered.cancel()
        #expect(answered.completed(.success(())) == .succeed)
        // A failure (maybe the abort itself) is reported as the cancellation, and not retried.
        var refused = Machine()
        _ = refused.start()
        _ = refused.willStartAttempt()
        _ = refused.cancel()
        #expect(refused.completed(.failure(.streamRefused)) == .fail(.cancelled))
    }

    @Test func shutdownBeforeTheLoopTookIt() {
        var machine = Machine()
        _ = machine.start()
        #expect(machine.submitFailed() == true)
        #expect(machine.state == .finished)
        #expect(machine.willStartAttempt() == .drop)
    }

    @Test func errorsCompareByKindAndDescribeThemselves() {
        let detailed = HTTPClientError(.timeout, curlCode: 28, detail: "Timeout was reached")
        #expect(detailed == .timeout)
        #expect(detailed != .connectionLost)
        #expect(detailed.description == "the request timed out [curl 28]: Timeout was reached")
    }

    @Test func curlMillisecondsRoundUpAndClamp() {
        #expect(Duration.milliseconds(500).curlMilliseconds == 500)
        #expect(Duration.microseconds(1).curlMilliseconds == 1)
        #expect(Duration.microseconds(1_500).curlMilliseconds == 2)
        #expect(Duration.zero.curlMilliseconds == 1)
        #expect(Duration.seconds(10_000_000).curlMilliseconds == Int(Int32.max))
    }
}
