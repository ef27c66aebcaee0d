import CHapiOpenSSL
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushSync

/// Load for `make bench relayload`: hubs on kept-alive HTTP/1.1 connections (one selector loop on a
/// thread of its own), slow clients dripping partial requests, and a `/health` probe on fresh
/// connections. Loopback only, bounded in connections and seconds.

/// Monotonic milliseconds.
func loadNow() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
}

/// A non-blocking (or blocking) TCP socket from `source` to 127.0.0.1:`port`; nil if it fails.
func loadSocket(port: Int, source: String, blocking: Bool) -> Int32? {
    let fd = Platform.makeStreamSocket(family: AF_INET, nonBlocking: !blocking, closeOnExec: false)
    guard fd >= 0 else { return nil }
    var local = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    inet_pton(AF_INET, source, &local.sin_addr)
    var remote = sockaddr_in()
    remote.sin_family = sa_family_t(AF_INET)
    remote.sin_port = in_port_t(UInt16(port).bigEndian)
    inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
    let size = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }
    let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }
    guard bound == 0, connected == 0 || (!blocking && errno == EINPROGRESS) else {
        close(fd)
        return nil
    }
    return fd
}

/// Latencies in milliseconds, and their percentiles.
struct LatencySample {
    var values: [Double] = []
    mutating func add(_ value: Double) { values.append(value) }
    func percentile(_ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p))]
    }
    var summary: String {
        String(format: "p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d)", percentile(0.5), percentile(0.99), percentile(1), values.count)
    }
}

/// Kept-alive hub connections, each POSTing a push every `interval` (first at a random moment
/// within it), for `seconds` after all are connected.
final class HubLoad: @unchecked Sendable {
    // @unchecked: everything is touched by the loop's thread only; results are read after `run`.
    struct Result {
        var connected = 0
        var heldAtEnd = 0
        var sent = 0
        var statuses: [Int: Int] = [:]
        var dropped = 0
        var unanswered = 0
        var latency = LatencySample()
        var connectSeconds = 0.0
    }

    private struct Connection {
        var fd: Int32
        var connecting = true
        var open = true
        var sentAt: Int64 = 0
        var nextAt: Int64 = 0
        var buffer: [UInt8] = []
        var pushes = 0
        let token: Int
    }

    let port: Int
    let sources: [String]
    let perSource: Int
    let intervalMilliseconds: Int64
    let seconds: Double
    /// A new device token for each push (else one per connection).
    let tokenPerPush: Bool
    private var connections: [Connection] = []
    private var nextToken = 0

    init(port: Int, sources: [String], perSource: Int, intervalMilliseconds: Int64, seconds: Double, tokenPerPush: Bool = false) {
        self.port = port
        self.sources = sources
        self.perSource = perSource
        self.intervalMilliseconds = intervalMilliseconds
        self.seconds = seconds
        self.tokenPerPush = tokenPerPush
    }

    private func request(token: Int) -> [UInt8] {
        let hex = String(format: "%064x", token)
        let body = #"{"platform":"ios","token":"\#(hex)","envelope":"\#(String(repeating: "A", count: 600))","collapseId":"load","priority":10}"#
        return Array("POST /v1/push HTTP/1.1\r\nHost: relay.bench\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    }

    func run() -> Result {
        var result = Result()
        guard var selector = try? PlatformSelectorBackend.make() else { return result }
        defer { selector.close() }
        let started = loadNow()
        // Connect at most 500 at a time: the listen backlog is bounded.
        var index = 0
        var pending = 0
        let total = sources.count * perSource
        var tokens = [UInt64](repeating: 0, count: 256)
        var flags = [UInt32](repeating: 0, count: 256)
        while index < total || pending > 0, loadNow() - started < 120_000 {
            while pending < 500, index < total {
                let source = sources[index / perSource]
                if let fd = loadSocket(port: port, source: source, blocking: false) {
                    _ = selector.set(fd, events: PlatformReadiness.writable, token: UInt64(connections.count), add: true)
                    connections.append(Connection(fd: fd, token: index))
                    pending += 1
                }
                index += 1
            }
            let count = selector.wait(tokens: &tokens, readiness: &flags, timeout: 100)
            for token in tokens.prefix(max(0, Int(count))) {
                let slot = Int(token)
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(connections[slot].fd, SOL_SOCKET, SO_ERROR, &error, &length)
                pending -= 1
                connections[slot].connecting = false
                if error == 0 {
                    result.connected += 1
                    _ = selector.set(connections[slot].fd, events: PlatformReadiness.readable, token: UInt64(slot), add: false)
                } else {
                    connections[slot].open = false
                    selector.remove(connections[slot].fd)
                    close(connections[slot].fd)
                }
            }
        }
        let holdStart = loadNow()
        result.connectSeconds = Double(holdStart - started) / 1000
        // A timing wheel of 10 ms slots: which connections push when.
        let slotMilliseconds: Int64 = 10
        let wheelSize = Int(intervalMilliseconds / slotMilliseconds) + 2
        var wheel = [[Int]](repeating: [], count: wheelSize)
        var generator = SystemRandomNumberGenerator()
        for slot in connections.indices where connections[slot].open {
            let offset = Int64.random(in: 0..<intervalMilliseconds, using: &generator)
            connections[slot].nextAt = holdStart + offset
            wheel[Int(offset / slotMilliseconds) % wheelSize].append(slot)
        }
        var wheelTime = holdStart
        let end = holdStart + Int64(seconds * 1000)
        var chunk = [UInt8](repeating: 0, count: 16384)
        // After `end`: no new pushes; up to 5 s for the answers still owed.
        while true {
            let now = loadNow()
            if now >= end {
                let owed = connections.reduce(0) { $0 + ($1.open && $1.sentAt != 0 ? 1 : 0) }
                if owed == 0 || now >= end + 5000 { break }
            }
            while wheelTime <= min(now, end) {
                let position = Int((wheelTime - holdStart) / slotMilliseconds) % wheelSize
                let due = wheel[position]
                wheel[position] = []
                for slot in due where connections[slot].open {
                    if connections[slot].nextAt > wheelTime + slotMilliseconds {
                        wheel[position].append(slot)
                        continue
                    }
                    if connections[slot].sentAt != 0 {
                        // Still waiting for the previous answer: try again next round.
                        connections[slot].nextAt = wheelTime + intervalMilliseconds
                        let later = Int((connections[slot].nextAt - holdStart) / slotMilliseconds) % wheelSize
                        wheel[later].append(slot)
                        continue
                    }
                    let token: Int
                    if tokenPerPush {
                        nextToken += 1
                        token = nextToken
                    } else {
                        token = connections[slot].token
                    }
                    let bytes = request(token: token)
                    let sent = bytes.withUnsafeBytes { Platform.send(connections[slot].fd, $0.baseAddress, $0.count) }
                    if sent != bytes.count {
                        connections[slot].open = false
                        result.dropped += 1
                        continue
                    }
                    result.sent += 1
                    connections[slot].sentAt = loadNow()
                    connections[slot].nextAt = wheelTime + intervalMilliseconds
                    let later = Int((connections[slot].nextAt - holdStart) / slotMilliseconds) % wheelSize
                    wheel[later].append(slot)
                }
                wheelTime += slotMilliseconds
            }
            let count = selector.wait(tokens: &tokens, readiness: &flags, timeout: 5)
            for token in tokens.prefix(max(0, Int(count))) {
                let slot = Int(token)
                guard connections[slot].open else { continue }
                let received = recv(connections[slot].fd, &chunk, chunk.count, 0)
                if received <= 0 {
                    if received < 0, errno == EAGAIN { continue }
                    connections[slot].open = false
                    selector.remove(connections[slot].fd)
                    result.dropped += 1
                    if connections[slot].sentAt != 0 { result.unanswered += 1 }
                    continue
                }
                connections[slot].buffer += chunk[0..<received]
                // One whole answer: the head, then Content-Length bytes.
                if let answer = Self.answer(in: connections[slot].buffer) {
                    result.statuses[answer.status, default: 0] += 1
                    result.latency.add(Double(loadNow() - connections[slot].sentAt))
                    connections[slot].sentAt = 0
                    connections[slot].buffer.removeFirst(answer.length)
                }
            }
        }
        for connection in connections where connection.open {
            result.heldAtEnd += 1
            if connection.sentAt != 0 { result.unanswered += 1 }
        }
        for connection in connections { close(connection.fd) }
        return result
    }

    /// The status and length of a whole HTTP/1.1 answer at the start of `bytes`.
    static func answer(in bytes: [UInt8]) -> (status: Int, length: Int)? {
        guard bytes.count >= 12 else { return nil }
        var headEnd = -1
        for index in 3..<bytes.count where bytes[index - 3] == 13 && bytes[index - 2] == 10 && bytes[index - 1] == 13 && bytes[index] == 10 {
            headEnd = index + 1
            break
        }
        guard headEnd > 0 else { return nil }
        let head = String(decoding: bytes[0..<headEnd], as: UTF8.self).lowercased()
        var length = 0
        for line in head.split(separator: "\r\n") where line.hasPrefix("content-length:") {
            length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        guard bytes.count >= headEnd + length else { return nil }
        let status = Int(String(decoding: bytes[9..<12], as: UTF8.self)) ?? 0
        return (status, headEnd + length)
    }
}

/// `GET /health` on a fresh connection every `everyMilliseconds` until `stop`; latencies (a
/// failure or a wait of more than 5 s counts as 5,000 ms).
final class HealthProbe: Sendable {
    private let samples = Locked(LatencySample())
    private let failures = Locked(0)
    private let stopped = Locked(false)
    private let finished = Locked(false)

    func start(port: Int, everyMilliseconds: Int) {
        Thread.detachNewThread { [self] in
            while !stopped.withLock({ $0 }) {
                let start = loadNow()
                let ok = Self.health(port: port)
                let elapsed = Double(loadNow() - start)
                samples.withLock { $0.add(ok ? elapsed : 5000) }
                if !ok { failures.withLock { $0 += 1 } }
                usleep(useconds_t(everyMilliseconds * 1000))
            }
            finished.withLock { $0 = true }
        }
    }

    func stop() -> (LatencySample, Int) {
        stopped.withLock { $0 = true }
        while !finished.withLock({ $0 }) { usleep(10_000) }
        return (samples.withLock { $0 }, failures.withLock { $0 })
    }

    static func health(port: Int) -> Bool {
        guard let fd = loadSocket(port: port, source: "127.0.0.1", blocking: true) else { return false }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Array("GET /health HTTP/1.1\r\nHost: relay.bench\r\n\r\n".utf8)
        guard Platform.send(fd, request, request.count) == request.count else { return false }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &chunk, chunk.count, 0)
            if count <= 0 { return false }
            buffer += chunk[0..<count]
            if let answer = HubLoad.answer(in: buffer) { return answer.status == 200 }
        }
    }
}

/// `count` connections from each of `sources`, each sending a partial request and then one
/// header byte every `dripSeconds`, until `stop`. Reports the most held open at once.
final class SlowClients: Sendable {
    private let stopped = Locked(false)
    private let finished = Locked(false)
    private let report = Locked((opened: 0, mostHeld: 0))

    func start(port: Int, sources: [String], count: Int, dripSeconds: Int) {
        Thread.detachNewThread { [self] in
            var sockets: [Int32] = []
            for source in sources {
                for _ in 0..<count {
                    guard let fd = loadSocket(port: port, source: source, blocking: true) else { continue }
                    let head = Array("POST /v1/push HTTP/1.1\r\nHost: relay.bench\r\n".utf8)
                    _ = Platform.send(fd, head, head.count, flags: Int32(MSG_DONTWAIT))
                    sockets.append(fd)
                }
            }
            report.withLock { $0.opened = sockets.count }
            var lastDrip = loadNow()
            while !stopped.withLock({ $0 }) {
                var held = 0
                var byte: UInt8 = 0
                for fd in sockets {
                    let peek = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
                    if peek < 0, errno == EAGAIN || errno == EWOULDBLOCK { held += 1 }
                }
                report.withLock { $0.mostHeld = max($0.mostHeld, held) }
                if loadNow() - lastDrip >= Int64(dripSeconds) * 1000 {
                    lastDrip = loadNow()
                    var drip: UInt8 = 0x58
                    for fd in sockets { _ = Platform.send(fd, &drip, 1, flags: Int32(MSG_DONTWAIT)) }
                }
                usleep(200_000)
            }
            for fd in sockets { close(fd) }
            finished.withLock { $0 = true }
        }
    }

    func stop() -> (opened: Int, mostHeld: Int) {
        stopped.withLock { $0 = true }
        while !finished.withLock({ $0 }) { usleep(10_000) }
        return report.withLock { $0 }
    }
}

/// The resident set of process `pid` in bytes (VmRSS), 0 if unknown.
func residentBytes(pid: Int32) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
    for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
    return 0
}
