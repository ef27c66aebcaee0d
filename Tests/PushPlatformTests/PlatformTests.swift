#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushSync
import Testing

/// The platform layer's calls on this system, each against the kernel: sockets with the flags
/// asked, writes to a peer gone that fail with EPIPE instead of killing the process, a TCP
/// connection's received bytes as the relay's guard reads them, thread names, descriptor limits.
@Suite struct PlatformTests {
    @Test func makesStreamSocketsWithTheFlagsAsked() throws {
        let both = Platform.makeStreamSocket(family: AF_INET)
        try #require(both >= 0)
        defer { Platform.close(both) }
        #expect(fcntl(both, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(both, F_GETFL) & O_NONBLOCK != 0)
        let neither = Platform.makeStreamSocket(family: AF_INET6, nonBlocking: false, closeOnExec: false)
        try #require(neither >= 0)
        defer { Platform.close(neither) }
        #expect(fcntl(neither, F_GETFD) & FD_CLOEXEC == 0)
        #expect(fcntl(neither, F_GETFL) & O_NONBLOCK == 0)
    }

    @Test func aWriteToAPeerGoneIsEPIPENotASignal() throws {
        let (client, server) = try Self.loopbackPair()
        defer { Platform.close(client) }
        Platform.close(server)
        // The first write may still be taken (the peer's RST arrives after it); then EPIPE.
        var byte: UInt8 = 1
        var failure: Int32 = 0
        for _ in 0..<100 {
            if Platform.send(client, &byte, 1) < 0 {
                failure = errno
                break
            }
            usleep(10_000)
        }
        // Reaching this line at all means no SIGPIPE ended the process.
        #expect(failure == EPIPE || failure == ECONNRESET, "errno \(failure)")
    }

    @Test func countsTheBytesATCPConnectionHasReceived() throws {
        let (client, server) = try Self.loopbackPair()
        defer {
            Platform.close(client)
            Platform.close(server)
        }
        // Linux (TCP_INFO) and Darwin (TCP_CONNECTION_INFO) count; elsewhere, "unknown".
        guard Platform.countsReceivedBytes else {
            #expect(Platform.tcpBytesReceived(server) == -1)
            return
        }
        #expect(Platform.tcpBytesReceived(server) == 0)
        let bytes = [UInt8](repeating: 7, count: 1234)
        #expect(bytes.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) } == bytes.count)
        // Counted by the kernel when they arrive, before anyone reads them.
        var seen: Int64 = 0
        for _ in 0..<100 where seen < 1234 {
            seen = Platform.tcpBytesReceived(server)
            if seen < 1234 { usleep(10_000) }
        }
        #expect(seen == 1234)
        // Not a TCP socket: unknown.
        #expect(Platform.tcpBytesReceived(-1) == -1)
    }

    @Test func namesThreadsAndReadsTheirStackSize() throws {
        let seen = Locked<(String, Int)>(("", 0))
        let thread = try PushThread.start(name: "hapi-platform-t", stackSize: 1 << 20) {
            seen.withLock { $0 = (Platform.thisThreadName(), Platform.thisThreadStackSize()) }
        }
        thread.join()
        let (name, stack) = seen.withLock { $0 }
        #expect(name == "hapi-platform-t")
        #expect((1 << 20...(1 << 20) + 65536).contains(stack), "stack of \(stack) bytes")
        // Named directly, on a thread of our own (never the test runner's).
        let renamed = Locked("")
        let other = try PushThread.start(name: "hapi-before") {
            Platform.nameThisThread("hapi-after")
            renamed.withLock { $0 = Platform.thisThreadName() }
        }
        other.join()
        #expect(renamed.withLock { $0 } == "hapi-after")
    }

    @Test func reportsTheDescriptorLimitAndRaisesItToTheHardOne() throws {
        let soft = try #require(Platform.descriptorLimit)
        let raised = try #require(Platform.raiseDescriptorLimit())
        #expect(raised >= soft)
        // Raised once, it stays: the soft limit now in force is the hard one.
        #expect(Platform.descriptorLimit == raised)
        #expect(Platform.raiseDescriptorLimit() == raised)
    }

    /// A connected TCP pair on 127.0.0.1: (client, the server's accepted end).
    private static func loopbackPair() throws -> (Int32, Int32) {
        let listener = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false)
        try #require(listener >= 0)
        defer { Platform.close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        try #require(bound == 0 && listen(listener, 1) == 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let client = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false)
        try #require(client >= 0)
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Platform.connect(client, $0, length) } }
        try #require(connected == 0)
        let server = accept(listener, nil, nil)
        try #require(server >= 0)
        return (client, server)
    }
}
