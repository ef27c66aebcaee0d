#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform

@testable import PushRelay

/// Raw client sockets for the slow-client tests: connect from any 127.x address, send bytes a
/// few at a time, exchange requests on one kept-alive connection, see whether the server closed.
/// Blocking calls: use them from `PushThread.run` or with short timeouts.
enum TestSocket {
    /// A connected socket from `source`, or nil.
    static func connect(port: Int, source: String = "127.0.0.1") -> Int32? {
        let fd = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false, closeOnExec: false)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let ok =
            withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
            && withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Platform.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            } == 0
        guard ok else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Sends all of `text` (false when the peer is gone).
    @discardableResult
    static func send(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Platform.send(fd, $0.baseAddress.map { $0 + offset }, bytes.count - offset) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Whether the server has closed the connection (end of stream or reset), without waiting.
    static func isClosed(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if count == 0 { return true }
        if count < 0 { return errno != EAGAIN && errno != EWOULDBLOCK }
        return false
    }

    /// `GET /health` on this connection; the status, or nil when it closed without one.
    static func health(_ fd: Int32) -> Int? {
        guard send(fd, "GET /health HTTP/1.1\r\nHost: relay.test\r\n\r\n") else { return nil }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { return nil }
            received += buffer[0..<count]
            let text = String(decoding: received, as: UTF8.self)
            // The health body is one JSON object: the answer is whole once it is closed.
            if text.hasSuffix("}") {
                let statusLine = text.prefix { $0 != "\r" }.split(separator: " ")
                return statusLine.count >= 2 ? Int(statusLine[1]) : nil
            }
        }
    }

    /// The status of the next answer on this connection (its head only), or nil when it closed
    /// without one.
    static func status(_ fd: Int32) -> Int? {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: received, as: UTF8.self).contains("\r\n") {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { return nil }
            received += buffer[0..<count]
        }
        let statusLine = String(decoding: received, as: UTF8.self).prefix { $0 != "\r" }.split(separator: " ")
        return statusLine.count >= 2 ? Int(statusLine[1]) : nil
    }

    /// Waits (up to `seconds`) until the server closes `fd`; the seconds it took, or nil.
    static func secondsUntilClosed(_ fd: Int32, within seconds: Double) -> Double? {
        let start = RelayConnectionGuard.now()
        while Double(RelayConnectionGuard.now() - start) / 1000 < seconds {
            if isClosed(fd) { return Double(RelayConnectionGuard.now() - start) / 1000 }
            usleep(20_000)
        }
        return nil
    }
}
