#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushCore
import PushHTTP
import PushLoopbackServer
import PushSync
import PushTestSupport
import Testing

@testable import PushRelay

/// Slow and greedy clients cannot starve others: the per-address connection limit, the
/// deadline for a whole request, and room for fresh connections near the connection limit.
@Suite struct RelaySlowClientTests {
    /// Sends one byte at a time every `interval` ms until the server closes the connection
    /// (or `seconds` pass); the seconds from the first byte to the close, or nil.
    static func drip(_ fd: Int32, _ bytes: String, intervalMilliseconds: Int, seconds: Double) -> Double? {
        let start = RelayConnectionGuard.now()
        var remaining = Array(bytes)
        while Double(RelayConnectionGuard.now() - start) / 1000 < seconds {
            if TestSocket.isClosed(fd) { return Double(RelayConnectionGuard.now() - start) / 1000 }
            if !remaining.isEmpty { TestSocket.send(fd, String(remaining.removeFirst())) }
            if remaining.isEmpty { remaining = Array("X-Drip: x\r\n") }
            usleep(useconds_t(intervalMilliseconds * 1000))
        }
        return nil
    }

    @Test func aHeadOrBodyThatTricklesIsClosedAtTheDeadline() async throws {
        let relay = try RelayFixture { configuration in
            configuration.server.requestDeadlineSeconds = 2
            configuration.server.connectionTimeoutSeconds = 30
        }
        let port = relay.server.port
        // The head: a byte every 200 ms keeps the inactivity timeout (30 s) from ever firing.
        let head = try await PushThread.run(name: "relay-test") { () -> Double? in
            guard let fd = TestSocket.connect(port: port) else { return -1 }
            defer { close(fd) }
            return Self.drip(fd, "POST /v1/push HTTP/1.1\r\nHost: relay.test\r\n", intervalMilliseconds: 200, seconds: 12)
        }
        // The body: the head at once, then a byte every 200 ms of a 1000-byte body.
        let body = try await PushThread.run(name: "relay-test") { () -> Double? in
            guard let fd = TestSocket.connect(port: port) else { return -1 }
            defer { close(fd) }
            TestSocket.send(fd, "POST /v1/push HTTP/1.1\r\nHost: relay.test\r\nContent-Length: 1000\r\n\r\n")
            return Self.drip(fd, String(repeating: "{", count: 1000), intervalMilliseconds: 200, seconds: 12)
        }
        // Idle between requests is not a request: a kept-alive connection quiet for longer
        // than the deadline still serves the next one.
        let idle = try await PushThread.run(name: "relay-test") { () -> [Int?] in
            guard let fd = TestSocket.connect(port: port) else { return [] }
            defer { close(fd) }
            let first = TestSocket.health(fd)
            usleep(3_500_000)
            return [first, TestSocket.health(fd)]
        }
        let closures = relay.server.guardedClosures
        await relay.stop()
        let headSeconds = try #require(head, "a trickling head was never closed")
        #expect(headSeconds >= 1.8 && headSeconds < 6, "head closed after \(headSeconds) s")
        let bodySeconds = try #require(body, "a trickling body was never closed")
        #expect(bodySeconds >= 1.8 && bodySeconds < 6, "body closed after \(bodySeconds) s")
        #expect(idle == [200, 200])
        #expect(closures.deadline == 2)
    }

    @Test func anAddressWithOnlyCompleteConnectionsIsCappedAtItsLimit() async throws {
        let relay = try RelayFixture { $0.server.connectionsPerAddress = 8 }
        let port = relay.server.port
        let (served, sameAddress, otherAddress, afterwards) = try await PushThread.run(name: "relay-test") { () -> ([Int?], Int?, Int?, Int?) in
            // Eight kept-alive connections that each completed a request: none may be closed.
            let sockets = (0..<8).compactMap { _ in TestSocket.connect(port: port, source: "127.0.0.2") }
            let served = sockets.map { TestSocket.health($0) }
            let sameAddress = TestSocket.connect(port: port, source: "127.0.0.2").flatMap { fd in
                defer { close(fd) }
                return TestSocket.health(fd)
            }
            let otherAddress = TestSocket.connect(port: port, source: "127.0.0.3").flatMap { fd in
                defer { close(fd) }
                return TestSocket.health(fd)
            }
            let stillServed = sockets.map { TestSocket.health($0) }
            sockets.forEach { close($0) }
            usleep(300_000)
            let afterwards = TestSocket.connect(port: port, source: "127.0.0.2").flatMap { fd in
                defer { close(fd) }
                return TestSocket.health(fd)
            }
            return (served + stillServed, sameAddress, otherAddress, afterwards)
        }
        let closures = relay.server.addressClosures
        await relay.stop()
        #expect(served.count == 16 && served.allSatisfy { $0 == 200 }, "the complete connections serve on: \(served)")
        #expect(sameAddress == nil, "a ninth connection from the same address is closed")
        #expect(otherAddress == 200)
        #expect(afterwards == 200)
        #expect(closures.evicted == 0 && closures.refused == 1)
    }

    @Test func anAddressWithOnlyBusyConnectionsIsCappedAtItsLimit() async throws {
        let relay = try RelayFixture { $0.server.connectionsPerAddress = 4 }
        relay.providers.apns.respond { _ in .json("").delayed(milliseconds: 1500) }
        let port = relay.server.port
        let body = iosPush().canonicalString
        let push = "POST /v1/push HTTP/1.1\r\nHost: relay.test\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let (statuses, sameAddress) = try await PushThread.run(name: "relay-test") { () -> ([Int?], Int?) in
            // Four connections whose pushes are being answered (APNs takes 1.5 s).
            let sockets = (0..<4).compactMap { _ in TestSocket.connect(port: port, source: "127.0.0.4") }
            sockets.forEach { TestSocket.send($0, push) }
            usleep(400_000)
            let sameAddress = TestSocket.connect(port: port, source: "127.0.0.4").flatMap { fd in
                defer { close(fd) }
                return TestSocket.health(fd)
            }
            let statuses = sockets.map { TestSocket.status($0) }
            sockets.forEach { close($0) }
            return (statuses, sameAddress)
        }
        let closures = relay.server.addressClosures
        await relay.stop()
        #expect(statuses == [200, 200, 200, 200], "the busy connections are answered")
        #expect(sameAddress == nil, "a fifth connection from the same address is closed")
        #expect(closures.evicted == 0 && closures.refused == 1)
    }

    /// A slow flood from one address (`flood` connections that each send a request line, then a
    /// header byte every `dripMilliseconds`), with (`reopen`) or without the attacker reopening what is
    /// closed at each drip, while a client from the same address sends `requests` health checks,
    /// every `freshEvery`-th on a fresh connection and the others on the kept-alive one
    /// (reconnecting when it is closed): the statuses it got (nil: closed without an answer)
    /// and the connections the attacker opened.
    static func floodFromOneAddress(
        port: Int, flood: Int, dripMilliseconds: Int, reopen: Bool, requests: Int, freshEvery: Int
    ) async throws -> (statuses: [Int?], attackerConnections: Int) {
        let stop = Locked(false)
        let opened = Locked(0)
        let flooding = try await withThrowingTaskGroup(of: Void.self) { group -> [Int?] in
            group.addTask {
                try await PushThread.run(name: "relay-flood") {
                    var sockets: [Int32] = []
                    func open() {
                        guard let fd = TestSocket.connect(port: port, source: "127.0.0.2") else { return }
                        opened.withLock { $0 += 1 }
                        TestSocket.send(fd, "POST /v1/push HTTP/1.1\r\n")
                        sockets.append(fd)
                    }
                    for _ in 0..<flood { open() }
                    while !stop.withLock({ $0 }) {
                        var kept: [Int32] = []
                        var lost = 0
                        for fd in sockets {
                            if TestSocket.isClosed(fd) {
                                close(fd)
                                lost += 1
                            } else {
                                TestSocket.send(fd, "X")
                                kept.append(fd)
                            }
                        }
                        sockets = kept
                        if reopen { for _ in 0..<lost { open() } }
                        usleep(useconds_t(dripMilliseconds * 1000))
                    }
                    sockets.forEach { close($0) }
                }
            }
            // The flood is in place before the client starts.
            while opened.withLock({ $0 }) < flood { try await Task.sleep(for: .milliseconds(20)) }
            let statuses = try await PushThread.run(name: "relay-test") { () -> [Int?] in
                var statuses: [Int?] = []
                var fd: Int32? = nil
                for index in 0..<requests {
                    if index % freshEvery == 0, let open = fd {
                        close(open)
                        fd = nil
                    }
                    if fd == nil { fd = TestSocket.connect(port: port, source: "127.0.0.2") }
                    let status = fd.flatMap { TestSocket.health($0) }
                    statuses.append(status)
                    if status == nil, let open = fd {
                        close(open)
                        fd = nil
                    }
                    usleep(10_000)
                }
                if let fd { close(fd) }
                return statuses
            }
            stop.withLock { $0 = true }
            try await group.waitForAll()
            return statuses
        }
        return (flooding, opened.withLock { $0 })
    }

    @Test func aClientBehindAFloodingAddressIsStillAnswered() async throws {
        let relay = try RelayFixture { configuration in
            configuration.server.requestDeadlineSeconds = 30
            configuration.server.connectionTimeoutSeconds = 60
        }
        let port = relay.server.port
        // The attack (1,100 connections from one address against the default limit of
        // 64, the attacker reopening what is closed at each drip), at a faster drip: every
        // request on a fresh connection (as a probe would), then a kept-alive client.
        for (reopen, freshEvery) in [(false, 1), (true, 1), (true, 25)] {
            let (statuses, attackerConnections) = try await Self.floodFromOneAddress(
                port: port, flood: 1100, dripMilliseconds: 500, reopen: reopen, requests: 300, freshEvery: freshEvery)
            let answered = statuses.filter { $0 == 200 }.count
            #expect(statuses.count == 300)
            #expect(answered * 100 >= statuses.count * 99, "reopen \(reopen), fresh every \(freshEvery): \(answered) of \(statuses.count) answered")
            #expect(attackerConnections >= (reopen ? 2200 : 1100), "the attacker reopened what was closed")
        }
        let closures = relay.server.addressClosures
        await relay.stop()
        #expect(closures.evicted >= 1036, "the flood's oldest connections made room: \(closures)")
    }

    @Test func atTheLimitTheOldestIdleConnectionsMakeRoom() async throws {
        let relay = try RelayFixture { configuration in
            configuration.server.threads = 1
            configuration.server.connectionLimit = 20
        }
        let port = relay.server.port
        let result = try await PushThread.run(name: "relay-test") { () -> (answered: [Int?], fresh: Int?, firstClosed: Bool, lastAgain: Int?) in
            var sockets: [Int32] = []
            var answered: [Int?] = []
            for _ in 0..<20 {
                guard let fd = TestSocket.connect(port: port) else { break }
                answered.append(TestSocket.health(fd))
                sockets.append(fd)
            }
            let fresh = TestSocket.connect(port: port).flatMap { fd in
                defer { close(fd) }
                return TestSocket.health(fd)
            }
            usleep(200_000)
            let firstClosed = sockets.first.map(TestSocket.isClosed) ?? false
            let lastAgain = sockets.last.flatMap(TestSocket.health)
            sockets.forEach { close($0) }
            return (answered, fresh, firstClosed, lastAgain)
        }
        let closures = relay.server.guardedClosures
        await relay.stop()
        #expect(result.answered.count == 20 && result.answered.allSatisfy { $0 == 200 })
        #expect(result.fresh == 200, "a fresh connection is served at the limit")
        #expect(result.firstClosed, "the oldest idle connection made room")
        #expect(result.lastAgain == 200, "the newest idle connection is kept")
        #expect(closures.idle >= 1)
    }

    @Test func stopJoinsTheSweepThreadAtOnce() async throws {
        let connectionGuard = RelayConnectionGuard(
            settings: .init(connectionLimit: 10, headDeadlineMilliseconds: 1000, bodyDeadlineMilliseconds: 1000, sweepMilliseconds: 5000))
        try connectionGuard.start()
        let running = connectionGuard.sweeperRunning
        let (seconds, after) = try await PushThread.run(name: "relay-test") { () -> (Double, Bool) in
            let start = RelayConnectionGuard.now()
            connectionGuard.stop()
            return (Double(RelayConnectionGuard.now() - start) / 1000, connectionGuard.sweeperRunning)
        }
        #expect(running)
        #expect(!after, "stop() returns once the sweep thread has ended")
        #expect(seconds < 2, "stop() wakes the sweep thread rather than waiting out its 5 s interval (\(seconds) s)")
        connectionGuard.stop()
    }

    /// Under the per-address limit, an incomplete connection whose whole request head already
    /// waits in its socket (a client's fresh connection libmicrohttpd has not read yet, during a
    /// burst of the attacker's) is passed over for the next oldest; the bytes stay unread.
    @Test func theLimitPassesOverAConnectionWhoseHeadWaitsUnread() throws {
        let connectionGuard = RelayConnectionGuard(
            settings: .init(connectionLimit: 100, headDeadlineMilliseconds: 10_000, bodyDeadlineMilliseconds: 10_000, connectionsPerAddress: 2))
        var pairs: [(server: Int32, peer: Int32)] = []
        defer { for pair in pairs { close(pair.server); close(pair.peer) } }
        for _ in 0..<3 {
            var fds: [Int32] = [-1, -1]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
            pairs.append((fds[0], fds[1]))
        }
        let head = "GET /health HTTP/1.1\r\nHost: relay.test\r\n\r\n"
        // The oldest has sent a whole head; the next only part of one; the third is new.
        #expect(TestSocket.send(pairs[0].peer, head))
        #expect(TestSocket.send(pairs[1].peer, "POST /v1/push HTTP/1.1\r\nHost: re"))
        #expect(RelayConnectionGuard.headPending(pairs[0].server))
        #expect(!RelayConnectionGuard.headPending(pairs[1].server))
        for (index, pair) in pairs.enumerated() { connectionGuard.started(key: UInt(index + 1), socket: pair.server, address: "127.0.0.2") }
        #expect(!TestSocket.isClosed(pairs[0].peer), "the connection with a whole head waiting is kept")
        #expect(TestSocket.isClosed(pairs[1].peer), "the next oldest incomplete one made room")
        #expect(!TestSocket.isClosed(pairs[2].peer))
        #expect(connectionGuard.addressCounts.evicted == 1)
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = recv(pairs[0].server, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        #expect(count > 0 && String(decoding: buffer.prefix(max(0, count)), as: UTF8.self) == head, "the peek left the head for libmicrohttpd")
        for index in 1...3 { connectionGuard.closed(key: UInt(index)) }
        #expect(connectionGuard.openConnections == 0)
    }

    @Test func aChunkedBodyPastTheCapIsAnswered413AndTheConnectionServesOn() async throws {
        let relay = try RelayFixture()
        let port = relay.server.port
        let (status, next) = try await PushThread.run(name: "relay-test") { () -> (Int?, Int?) in
            guard let fd = TestSocket.connect(port: port) else { return (nil, nil) }
            defer { close(fd) }
            TestSocket.send(fd, "POST /v1/push HTTP/1.1\r\nHost: relay.test\r\nTransfer-Encoding: chunked\r\n\r\n")
            let chunk = String(repeating: "y", count: 8192)
            for _ in 0..<10 { TestSocket.send(fd, "2000\r\n\(chunk)\r\n") }
            TestSocket.send(fd, "0\r\n\r\n")
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !String(decoding: received, as: UTF8.self).contains("}") {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { return (nil, nil) }
                received += buffer[0..<count]
            }
            let text = String(decoding: received, as: UTF8.self)
            let status = text.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            return (text.contains("too_large") ? status : -1, TestSocket.health(fd))
        }
        await relay.stop()
        #expect(status == 413)
        #expect(next == 200, "the connection was read to the end of the body and serves on")
    }
}
