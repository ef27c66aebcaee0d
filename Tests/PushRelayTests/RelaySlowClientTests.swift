#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushHTTP
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

    @Test func oneAddressHoldsAtMostItsLimitOfConnections() async throws {
        let relay = try RelayFixture { $0.server.connectionsPerAddress = 8 }
        let port = relay.server.port
        let (open, sameAddress, otherAddress, afterwards) = try await PushThread.run(name: "relay-test") { () -> (Int, Int?, Int?, Int?) in
            let sockets = (0..<20).compactMap { _ in TestSocket.connect(port: port, source: "127.0.0.2") }
            usleep(500_000)
            let open = sockets.filter { !TestSocket.isClosed($0) }.count
            let sameAddress = TestSocket.connect(port: port, source: "127.0.0.2").flatMap { fd in
                defer { close(fd) }
                return TestSocket.health(fd)
            }
            let otherAddress = TestSocket.connect(port: port, source: "127.0.0.3").flatMap { fd in
                defer { close(fd) }
                return TestSocket.health(fd)
            }
            sockets.forEach { close($0) }
            usleep(300_000)
            let afterwards = TestSocket.connect(port: port, source: "127.0.0.2").flatMap { fd in
                defer { close(fd) }
                return TestSocket.health(fd)
            }
            return (open, sameAddress, otherAddress, afterwards)
        }
        await relay.stop()
        #expect(open == 8)
        #expect(sameAddress == nil, "a ninth connection from the same address is closed")
        #expect(otherAddress == 200)
        #expect(afterwards == 200)
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
