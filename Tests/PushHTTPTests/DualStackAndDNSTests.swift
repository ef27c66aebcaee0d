import Foundation
import PushLoopbackServer
import PushPlatform
import PushSync
import Testing

@testable import PushHTTP

// How the HTTP/2 engine finds and reaches a host: lookups on a small resolver pool (never the
// event loop, never a thread per lookup) with a deadline, no negative caching, and Happy
// Eyeballs over a host's IPv6 and IPv4 addresses. Names are answered by the resolver's test
// override; every connection is real.
@Suite(.serialized) struct DualStackAndDNSTests {
    typealias Support = HTTPClientTests

    // MARK: - Happy Eyeballs

    @Test func aDeadIPv6AddressDoesNotDelayTheIPv4One() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        // [::1]:port accepts nothing: a listener whose accept queue is full drops every SYN.
        let blackhole = try NeverAnsweringIPv6Listener(port: server.port)
        defer { blackhole.close() }
        var configuration = Support.trusting(server)
        configuration.connectTimeout = .seconds(10)
        configuration.requestTimeout = .seconds(20)
        configuration.resolverOverride = { host in host == "localhost" ? ["::1", "127.0.0.1"] : nil }
        let client = try HTTPClient(configuration: configuration)
        let started = ContinuousClock.now
        let result = await client.result(HTTPRequest(url: server.localhostBaseURL + "/dual"))
        let elapsed = ContinuousClock.now - started
        #expect((try? result.get().status) == 200)
        // 250 ms for the IPv6 attempt's head start, then one loopback handshake: well within a
        // second, where trying the addresses one after another waits out the 10 s connect timeout.
        #expect(elapsed < .seconds(1), "connected after \(elapsed)")
        #expect(elapsed >= .milliseconds(200), "the IPv6 attempt should have had its 250 ms head start (\(elapsed))")
        #expect(server.connectionsAccepted == 1)
        await client.shutdown()
    }

    @Test func aRefusedAddressMovesOnAtOnce() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        var configuration = Support.trusting(server)
        // 127.0.0.2 is loopback too, and nothing listens on it at the server's port: refused.
        configuration.resolverOverride = { host in host == "localhost" ? ["127.0.0.2", "127.0.0.1"] : nil }
        let client = try HTTPClient(configuration: configuration)
        let started = ContinuousClock.now
        let result = await client.result(HTTPRequest(url: server.localhostBaseURL + "/refused-first"))
        #expect((try? result.get().status) == 200)
        #expect(ContinuousClock.now - started < .milliseconds(200), "a refusal must not wait for the attempt delay")
        await client.shutdown()
    }

    @Test func addressesAreInterleavedByFamily() throws {
        func addresses(_ texts: [String]) throws -> [SocketAddress] {
            try texts.flatMap { try SocketAddress.resolve(host: $0, port: 443, numericOnly: true).get() }
        }
        let ordered = SocketAddress.interleaved(try addresses(["::1", "::2", "::3", "10.0.0.1", "10.0.0.2"]))
        #expect(ordered.map(\.family) == [AF_INET6, AF_INET, AF_INET6, AF_INET, AF_INET6] as [Int32])
        let v4First = SocketAddress.interleaved(try addresses(["10.0.0.1", "::1", "::2"]))
        #expect(v4First.map(\.family) == [AF_INET, AF_INET6, AF_INET6] as [Int32])
    }

    // MARK: - DNS

    @Test func aNameThatDoesNotResolveFailsAndIsLookedUpAgainNextTime() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        let resolvable = Locked(false)
        var configuration = Support.trusting(server)
        configuration.resolverOverride = { host in
            guard host == "localhost" else { return nil }
            return resolvable.withLock { $0 } ? ["127.0.0.1"] : []
        }
        let client = try HTTPClient(configuration: configuration)
        let url = server.localhostBaseURL + "/dns"
        let first = await client.send([HTTPRequest(url: url), HTTPRequest(url: url)])
        #expect(first.allSatisfy { $0.result.failure == .dnsFailure })
        #expect(first.first?.result.failure?.detail?.contains("localhost") == true)
        resolvable.withLock { $0 = true }
        // No negative cache: the next dispatch looks the name up again and connects.
        let second = await client.result(HTTPRequest(url: url))
        #expect((try? second.get().status) == 200)
        #expect(client.statistics.hostLookups == 2)
        await client.shutdown()
    }

    @Test func aLookupThatHangsFailsAtTheConnectDeadlineWithoutHoldingTheLoop() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        var configuration = Support.trusting(server)
        configuration.connectTimeout = .milliseconds(500)
        configuration.resolverOverride = { host in
            guard host == "localhost" else { return nil }
            usleep(3_000_000)  // a resolver that does not answer
            return ["127.0.0.1"]
        }
        let client = try HTTPClient(configuration: configuration)
        let started = ContinuousClock.now
        async let slow = client.result(HTTPRequest(url: server.localhostBaseURL + "/slow-dns"))
        // Meanwhile the loop serves a numeric origin at once.
        let numeric = await client.result(HTTPRequest(url: server.baseURL + "/numeric"))
        #expect((try? numeric.get().status) == 200)
        #expect(ContinuousClock.now - started < .milliseconds(400))
        let failed = await slow
        let elapsed = ContinuousClock.now - started
        #expect(failed.failure == .dnsFailure)
        #expect(elapsed >= .milliseconds(450) && elapsed < .milliseconds(2500), "failed after \(elapsed)")
        await client.shutdown()
    }

    @Test func lookupsRunOnTwoResolverThreadsNotOneThreadEach() async throws {
        let server = try LoopbackServer(transport: .cleartext, handler: Support.echo)
        defer { server.stop() }
        let threads = Locked(Set<UInt>())
        var configuration = HTTPClient.Configuration(forceHTTP2PriorKnowledge: true)
        configuration.resolverOverride = { host in
            guard host.hasSuffix(".pool.test") else { return nil }
            threads.withLock { _ = $0.insert(UInt(pthread_self())) }
            usleep(20_000)
            return ["127.0.0.1"]
        }
        let client = try HTTPClient(configuration: configuration)
        let requests = (0..<40).map { HTTPRequest(url: "http://origin\($0).pool.test:\(server.port)/r") }
        let outcomes = await client.send(requests)
        #expect(outcomes.allSatisfy { (try? $0.result.get().status) == 200 })
        #expect(client.statistics.hostLookups == 40)
        #expect(threads.withLock { $0.count } <= HTTPResolver.threadCount)
        await client.shutdown()
    }
}

/// A TCP listener on [::1]:port that never completes a handshake: its accept queue (backlog 0)
/// is filled by two connections nobody accepts, after which the kernel drops every SYN.
final class NeverAnsweringIPv6Listener {
    private var descriptors: [Int32] = []

    init(port: Int) throws {
        let listener = Platform.makeStreamSocket(family: AF_INET6, nonBlocking: false, closeOnExec: false)
        try #require(listener >= 0, "socket(AF_INET6): \(String(cString: strerror(errno)))")
        descriptors.append(listener)
        var one: Int32 = 1
        _ = setsockopt(listener, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        try #require(bound == 0, "cannot bind [::1]:\(port): \(String(cString: strerror(errno)))")
        try #require(listen(listener, 0) == 0)
        // Fill the queue: connections that complete and are never accepted.
        for _ in 0..<2 {
            _ = try connect(port: port, waitMilliseconds: 500)
        }
        // Prove it: one more connection attempt must not complete.
        let probeCompleted = try connect(port: port, waitMilliseconds: 300)
        try #require(!probeCompleted, "[::1]:\(port) still completes handshakes: cannot make a never-answering IPv6 address here")
    }

    /// Starts a non-blocking connect and waits for it; true if it completed.
    private func connect(port: Int, waitMilliseconds: Int32) throws -> Bool {
        let client = Platform.makeStreamSocket(family: AF_INET6, closeOnExec: false)
        try #require(client >= 0)
        descriptors.append(client)
        var address = Self.loopback(port: port)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Platform.connect(client, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
        var entry = pollfd(fd: client, events: Int16(POLLOUT), revents: 0)
        return poll(&entry, 1, waitMilliseconds) == 1
    }

    private static func loopback(port: Int) -> sockaddr_in6 {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = in_port_t(UInt16(port).bigEndian)
        address.sin6_addr = in6addr_loopback
        return address
    }

    func close() {
        for descriptor in descriptors { Platform.close(descriptor) }
        descriptors = []
    }
}
