import Foundation
import PushLoopbackServer
import PushSync
import Testing

@testable import PushHTTP

// The nghttp2 engine against the real loopback server (nghttp2's server session over
// OpenSSL): what HTTP/2 itself can do to a client — GOAWAY, refused streams, stream limits,
// flow control, a peer that hangs — and what the engine promises around it: deadlines from
// submission, cancellation, shutdown, no growth over 100,000 requests, and libcurl for the
// origins that do not speak HTTP/2. Timing bounds are derived from the configured timeouts.
@Suite(.serialized) struct HTTP2EngineTests {
    typealias Support = HTTPClientTests

    static func client(
        for server: LoopbackServer, _ adjust: (inout HTTPClient.Configuration) -> Void = { _ in }
    ) throws -> HTTPClient {
        var configuration = Support.trusting(server)
        adjust(&configuration)
        return try HTTPClient(configuration: configuration)
    }

    static func requests(_ count: Int, to server: LoopbackServer, path: String = "/r", body: [UInt8] = []) -> [HTTPRequest] {
        (0..<count).map { HTTPRequest(method: body.isEmpty ? .get : .post, url: server.baseURL + "\(path)/\($0)", body: body) }
    }

    // MARK: - GOAWAY and refused streams

    @Test func goawayLetsStreamsBelowLastStreamIDFinishAndReportsTheRestRefused() async throws {
        // Ten requests in one batch get streams 1, 3, ... 19. On connection 1 the sixth
        // (stream 11) answers GOAWAY(last-stream-id 9): streams 1–9 still finish there, 11–19
        // are refused by it and reported `.streamRefused` (the client resends nothing: the
        // provider layer does). Sent again, they go on connection 2.
        let server = try LoopbackServer(transport: .tls) { request in
            guard request.connectionID == 1 else { return Support.echo(request) }
            return request.path == "/g/5" ? .action(.goaway(), delayMilliseconds: 20) : Support.echo(request).delayed(milliseconds: 150)
        }
        defer { server.stop() }
        let client = try Self.client(for: server) { $0.maximumConnectionsPerHost = 1 }
        let requests = Self.requests(10, to: server, path: "/g")
        let outcomes = await client.send(requests)
        let connections = outcomes.map { try? $0.result.get().headers.first(name: "x-connection") }
        #expect(connections == Array(repeating: "1", count: 5) + Array(repeating: nil, count: 5))
        #expect(outcomes.suffix(5).allSatisfy { $0.result.failure == .streamRefused })
        #expect(client.statistics.requestsSent == 10)
        let again = await client.send(Array(requests.suffix(5)))
        #expect(again.allSatisfy { (try? $0.result.get().headers.first(name: "x-connection")) == "2" })
        #expect(server.connectionsAccepted == 2)
        await client.shutdown()
    }

    @Test func aRefusedStreamIsReportedNotResent() async throws {
        let server = try LoopbackServer(transport: .tls) { _ in .action(.resetStream(errorCode: 7)) }
        defer { server.stop() }
        let client = try Self.client(for: server)
        let result = await client.result(HTTPRequest(url: server.baseURL + "/refused"))
        #expect(result.failure == .streamRefused)
        #expect(client.statistics.requestsSent == 1)
        #expect(server.requestsHandled == 1)
        await client.shutdown()
    }

    // MARK: - Stream limits and the pool

    @Test func theServersStreamLimitIsHonouredAndConnectionsOpenOnlyWhenFull() async throws {
        // nghttp2's server refuses streams beyond its SETTINGS_MAX_CONCURRENT_STREAMS: a client
        // that overran the limit would show up as retries.
        let server = try LoopbackServer(transport: .tls, maxConcurrentStreams: 5) { request in
            Support.echo(request).delayed(milliseconds: 40)
        }
        defer { server.stop() }
        let client = try Self.client(for: server) { $0.maximumConnectionsPerHost = 4 }

        let five = await client.send(Self.requests(5, to: server, path: "/five"))
        #expect(five.allSatisfy { (try? $0.result.get().status) == 200 })
        #expect(server.connectionsAccepted == 1)  // five fit on one connection

        let forty = await client.send(Self.requests(40, to: server, path: "/forty"))
        #expect(forty.allSatisfy { (try? $0.result.get().status) == 200 })
        #expect(server.connectionsAccepted == 4)  // full ones made room for more, up to the maximum
        #expect(client.statistics.requestsSent == 45)  // none refused: the limit was never overrun
        #expect(client.statistics.openHTTP2Connections == 4)
        await client.shutdown()
        #expect(client.statistics.openHTTP2Connections == 0)
    }

    // MARK: - Flow control

    @Test func uploadsLargerThanA64KiBWindowWaitForWindowUpdates() async throws {
        // The server announces a 65,535-byte window for each stream and the connection: a
        // 1 MiB body, and ten 200 KB bodies at once, cross only as fast as it hands credit back.
        let server = try LoopbackServer(transport: .tls, initialWindowSize: 65_535) { request in
            LoopbackServer.Response(status: 200, body: Array(String(request.body.count).utf8))
                .adding(header: "x-sum", String(request.body.reduce(0) { $0 &+ Int($1) }))
        }
        defer { server.stop() }
        let client = try Self.client(for: server)
        let large = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let response = try await client.send(HTTPRequest(method: .post, url: server.baseURL + "/upload", body: large))
        #expect(response.bodyString == String(large.count))
        #expect(response.headers.first(name: "x-sum") == String(large.reduce(0) { $0 &+ Int($1) }))

        let bodies = (0..<10).map { index in [UInt8](repeating: UInt8(index), count: 200_000) }
        let outcomes = await client.send(bodies.map { HTTPRequest(method: .post, url: server.baseURL + "/many", body: $0) })
        #expect(outcomes.map { try? $0.result.get().bodyString } == Array(repeating: "200000", count: 10))
        #expect(server.connectionsAccepted == 1)
        await client.shutdown()
    }

    // MARK: - A peer that hangs

    @Test func aDeadIdleConnectionIsFoundByPINGAndReplaced() async throws {
        let server = try LoopbackServer(transport: .tls) { request in
            request.connectionID == 1 ? Support.echo(request).with(action: .respondThenSilent) : Support.echo(request)
        }
        defer { server.stop() }
        let client = try Self.client(for: server) {
            $0.pingInterval = .milliseconds(200)
            $0.pingTimeout = .milliseconds(200)
            $0.requestTimeout = .seconds(5)
        }
        let first = try await client.send(HTTPRequest(url: server.baseURL + "/before"))
        #expect(first.headers.first(name: "x-connection") == "1")
        // Connection 1 now hears nothing: its PING goes unanswered and it is closed.
        try await Support.waitUntil { client.statistics.openHTTP2Connections == 0 }
        let started = ContinuousClock.now
        let second = try await client.send(HTTPRequest(url: server.baseURL + "/after"))
        #expect(second.headers.first(name: "x-connection") == "2")
        #expect(started.duration(to: .now) < .seconds(5))  // a fresh connection, not a request timeout
        await client.shutdown()
    }

    @Test func withoutAPINGARequestOnAHungConnectionTimesOut() async throws {
        // The counterpart: with PINGs too rare to notice, the hung connection swallows the next
        // request until its timeout. This is what the PING saves.
        let server = try LoopbackServer(transport: .tls) { request in
            request.connectionID == 1 ? Support.echo(request).with(action: .respondThenSilent) : Support.echo(request)
        }
        defer { server.stop() }
        let client = try Self.client(for: server) {
            $0.pingInterval = .seconds(3600)
            $0.requestTimeout = .milliseconds(300)
        }
        _ = try await client.send(HTTPRequest(url: server.baseURL + "/before"))
        let result = await client.result(HTTPRequest(url: server.baseURL + "/after"))
        #expect(result.failure == .timeout)
        #expect(server.connectionsAccepted == 1)
        await client.shutdown()
    }

    // MARK: - Deadlines

    @Test func theTimeoutCountsFromSubmissionWhileWaitingForAConnection() async throws {
        // A server that accepts TCP but never completes TLS: the 300 ms request timeout wins
        // over the 5 s connect timeout.
        let server = try LoopbackServer(transport: .tls, silent: true) { _ in .json("{}") }
        defer { server.stop() }
        let client = try Self.client(for: server) {
            $0.requestTimeout = .milliseconds(300)
            $0.connectTimeout = .seconds(5)
        }
        let started = ContinuousClock.now
        let outcomes = await client.send(Self.requests(3, to: server))
        #expect(outcomes.allSatisfy { $0.result.failure == .timeout })
        #expect(started.duration(to: .now) < .seconds(4))
        await client.shutdown()
    }

    @Test func theTimeoutCountsFromSubmissionWhileWaitingForAStream() async throws {
        // One stream allowed and it never answers: the second request waits for a stream that
        // never frees up, and times out on its own clock.
        let server = try LoopbackServer(transport: .tls, maxConcurrentStreams: 1) { _ in .action(.neverRespond) }
        defer { server.stop() }
        let client = try Self.client(for: server) {
            $0.requestTimeout = .milliseconds(300)
            $0.maximumConnectionsPerHost = 1
        }
        let outcomes = await client.send(Self.requests(2, to: server))
        #expect(outcomes.map { $0.result.failure } == [.timeout, .timeout])
        #expect(server.requestsHandled == 1)
        try await Support.waitUntil { client.liveRequestCount == 0 }
        await client.shutdown()
    }

    @Test func theConnectTimeoutFailsTheWaitingRequests() async throws {
        let server = try LoopbackServer(transport: .tls, silent: true) { _ in .json("{}") }
        defer { server.stop() }
        let client = try Self.client(for: server) {
            $0.requestTimeout = .seconds(5)
            $0.connectTimeout = .milliseconds(200)
        }
        let result = await client.result(HTTPRequest(url: server.baseURL + "/"))
        #expect(result.failure == .timeout)
        #expect(result.failure?.detail?.contains("connecting") == true)
        await client.shutdown()
    }

    @Test func requestsArrivingAtAnOriginThatCannotBeReachedCostOneConnectPerBackoffPeriod() async throws {
        // A server that accepts and never finishes a handshake: each connect fails at the
        // connect timeout. A request every 10 ms for 600 ms: without the pool's backoff every
        // sweep (50 ms) would start a connect (a dozen or more); with it, 100, 200, 400 ms apart.
        let server = try LoopbackServer(transport: .tls, silent: true) { _ in .json("{}") }
        defer { server.stop() }
        let client = try Self.client(for: server) {
            $0.requestTimeout = .seconds(3)
            $0.connectTimeout = .milliseconds(20)
        }
        let started = ContinuousClock.now
        let failures = await withTaskGroup(of: HTTPClientError?.self) { group in
            for index in 0..<60 {
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(10 * index))
                    return await client.result(HTTPRequest(url: server.baseURL + "/\(index)")).failure
                }
            }
            var failures: [HTTPClientError] = []
            for await failure in group { if let failure { failures.append(failure) } }
            return failures
        }
        let elapsed = ContinuousClock.now - started
        #expect(failures.count == 60, "every request fails: the origin never answers")
        #expect(failures.allSatisfy { $0.code == .timeout && $0.detail?.contains("connecting") == true }, "\(Set(failures.compactMap(\.detail)))")
        #expect((2...6).contains(server.connectionsAccepted), "\(server.connectionsAccepted) connects in \(elapsed)")
        #expect(elapsed < .seconds(2), "each waits one backoff at most, never its whole timeout")
        await client.shutdown()
    }

    // MARK: - Cancellation and shutdown

    @Test func cancellingABatchAbortsEveryRequestAndTheClientKeepsWorking() async throws {
        let server = try LoopbackServer(transport: .tls) { request in
            request.path.hasPrefix("/hang") ? .action(.neverRespond) : Support.echo(request)
        }
        defer { server.stop() }
        let client = try Self.client(for: server)
        let task = Task { await client.send(Self.requests(50, to: server, path: "/hang")) }
        try await Support.waitUntil { server.requestsHandled == 50 }
        let started = ContinuousClock.now
        task.cancel()
        let outcomes = await task.value
        #expect(started.duration(to: .now) < .seconds(2))
        #expect(outcomes.count == 50)
        #expect(outcomes.allSatisfy { $0.result.failure == .cancelled })
        try await Support.waitUntil { client.liveRequestCount == 0 }
        #expect(try await client.send(HTTPRequest(url: server.baseURL + "/still")).status == 200)
        #expect(server.connectionsAccepted == 1)  // cancelled streams were reset, the connection kept
        await client.shutdown()
    }

    @Test func shutdownFailsABatchOnTheWireAndInTheQueue() async throws {
        let server = try LoopbackServer(transport: .tls, maxConcurrentStreams: 10) { _ in .action(.neverRespond) }
        defer { server.stop() }
        let client = try Self.client(for: server) { $0.maximumConnectionsPerHost = 1 }
        let task = Task { await client.send(Self.requests(100, to: server)) }
        try await Support.waitUntil { server.requestsHandled == 10 }
        await client.shutdown()
        let outcomes = await task.value
        #expect(outcomes.allSatisfy { $0.result.failure == .shutdown })
        #expect(client.liveRequestCount == 0)
        #expect(client.statistics.openHTTP2Connections == 0)
        try await Support.waitUntil { server.openConnections == 0 }
    }

    // MARK: - Batches

    @Test func aBatchAnswersInOrderEachWithItsOwnOutcome() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        let (closedFD, closedPort) = try Support.boundButNotListening()
        defer { close(closedFD) }
        let client = try Self.client(for: server)
        let outcomes = await client.send([
            HTTPRequest(method: .post, url: server.baseURL + "/a", body: [1]),
            HTTPRequest(url: "ftp://example.invalid/"),
            HTTPRequest(url: "https://127.0.0.1:\(closedPort)/"),
            HTTPRequest(method: .post, url: server.baseURL + "/b", body: [2]),
        ])
        #expect(try outcomes[0].result.get().body == [1])
        #expect(outcomes[1].result.failure == .invalidRequest)
        #expect(outcomes[2].result.failure == .connectionRefused)
        #expect(try outcomes[3].result.get().body == [2])
        await client.shutdown()
    }

    // MARK: - Routing

    @Test func anHTTPSServerWithoutHTTP2IsServedByLibcurl() async throws {
        let server = try LoopbackServer(transport: .tls, http1Only: true, handler: Support.echo)
        defer { server.stop() }
        let client = try Self.client(for: server)
        for path in ["/first", "/second"] {
            let response = try await client.send(HTTPRequest(method: .post, url: server.baseURL + path, body: Array(path.utf8)))
            #expect(response.status == 200)
            #expect(response.httpVersion == .http1_1)
            #expect(response.body == Array(path.utf8))
        }
        #expect(client.statistics.openHTTP2Connections == 0)
        await client.shutdown()
    }

    /// libcurl's copy of the trust store (the system bundle and the extra CA, ~200 KB) is
    /// made for the first transfer libcurl serves, never for a client that only speaks HTTP/2.
    @Test func libcurlsTrustBundleIsBuiltOnlyWhenLibcurlServes() async throws {
        let h2 = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { h2.stop() }
        let h2Client = try Self.client(for: h2)
        #expect(try await h2Client.send(HTTPRequest(method: .get, url: h2.baseURL + "/a")).httpVersion == .http2)
        let h2Store = try #require(h2Client.curl.settings.trustStore)
        #expect(!h2Store.isBuilt)
        await h2Client.shutdown()

        let h1 = try LoopbackServer(transport: .tls, http1Only: true, handler: Support.echo)
        defer { h1.stop() }
        let h1Client = try Self.client(for: h1)
        let h1Store = try #require(h1Client.curl.settings.trustStore)
        #expect(!h1Store.isBuilt)
        #expect(try await h1Client.send(HTTPRequest(method: .get, url: h1.baseURL + "/b")).httpVersion == .http1_1)
        #expect(h1Store.isBuilt)
        await h1Client.shutdown()
    }

    @Test func h2cWithPriorKnowledgeReusesOneConnection() async throws {
        let server = try LoopbackServer(transport: .cleartext, handler: Support.echo)
        defer { server.stop() }
        let client = try HTTPClient(configuration: .init(forceHTTP2PriorKnowledge: true))
        let outcomes = await client.send(Self.requests(20, to: server))
        #expect(outcomes.allSatisfy { (try? $0.result.get().httpVersion) == .http2 })
        #expect(server.connectionsAccepted == 1)
        await client.shutdown()
    }

    // MARK: - No growth

    @Test func aHundredThousandRequestsLeakNoDescriptorOrMemory() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        // Two connections of 100 streams: every round of 1,000 keeps requests waiting, so the
        // pool opens both (one at a time) while warming up; how many it opens in one round of a
        // larger pool depends on how fast streams come free, and would make the count a race.
        let client = try Self.client(for: server) { $0.maximumConnectionsPerHost = 2 }
        let body = [UInt8](repeating: 0x61, count: 512)
        func round(_ count: Int) async -> Int {
            let outcomes = await client.send(
                (0..<count).map { HTTPRequest(method: .post, url: server.baseURL + "/soak/\($0)", body: body) })
            return outcomes.filter { (try? $0.result.get().status) == 200 }.count
        }
        // Warm up allocator pools and both connections, then measure.
        var warmups = 0
        repeat {
            #expect(await round(5_000) == 5_000)
            warmups += 1
        } while server.connectionsAccepted < 2 && warmups < 10
        let connections = server.connectionsAccepted
        #expect(connections == 2)
        let descriptors = Support.openFileDescriptors()
        let residentBefore = Self.residentBytes()
        var succeeded = 0
        for _ in 0..<100 { succeeded += await round(1_000) }
        #expect(succeeded == 100_000)
        // No growth: the count is the whole process's, and a previous suite's cleanup finishing
        // meanwhile (a detached shutdown) may close descriptors, never open ones of ours.
        #expect(Support.openFileDescriptors() <= descriptors)
        #expect(client.liveRequestCount == 0)
        #expect(server.connectionsAccepted == connections)  // the pool was reused, never replaced
        let growth = Self.residentBytes() - residentBefore
        #expect(growth < 32 << 20, "resident memory grew by \(growth) bytes over 100,000 requests")
        await client.shutdown()
    }

    /// This process's resident set, from /proc/self/statm.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

extension LoopbackServer.Response {
    func with(action: LoopbackServer.Action) -> LoopbackServer.Response {
        var copy = self
        copy.action = action
        return copy
    }
}

extension HTTPResponse {
    var bodyString: String { String(decoding: body, as: UTF8.self) }
}
