import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushEnvelope
import PushHTTP
import PushLoopbackServer
import PushSync
import PushTestSupport
import PushTransports
import Testing

@testable import PushRelay

/// 64 hex digits in mixed case: the relay must lowercase it.
let mixedCaseToken = String(repeating: "A1b2c3d4", count: 8)
/// Opaque ciphertext as the hub sends it.
let sampleEnvelope = Base64.encode(Array("opaque-e2e-ciphertext-bytes-here".utf8))

/// The relay's environment pointing at loopback APNs and FCM stand-ins (real HTTP/2 over TLS,
/// trusted through `RELAY_CA_FILE`), bound to 127.0.0.1 on a free port.
func relayEnvironment(_ providers: LoopbackProviders, apns: Bool = true, fcm: Bool = true) -> [String: String] {
    var environment = ["RELAY_HOST": "127.0.0.1", "RELAY_PORT": "0", "RELAY_CA_FILE": providers.caBundlePath]
    if apns {
        environment["RELAY_APNS_KEY_P8_PATH"] = providers.apnsKeyPath
        environment["RELAY_APNS_KEY_ID"] = "DEMO123456"
        environment["RELAY_APNS_TEAM_ID"] = "TEAM123456"
        environment["RELAY_APNS_BUNDLE_ID"] = "run.hapi.app"
        environment["RELAY_APNS_ENDPOINT"] = providers.apns.baseURL
    }
    if fcm {
        environment["RELAY_FCM_SERVICE_ACCOUNT_PATH"] = providers.serviceAccountPath
        environment["RELAY_FCM_ENDPOINT"] = providers.fcm.baseURL
    }
    return environment
}

/// A clock tests move by hand (monotonic seconds).
final class ManualClock: Sendable {
    private let time = Locked<Double>(1000)
    var now: @Sendable () -> Double { { [self] in time.withLock { $0 } } }
    func advance(_ seconds: Double) { time.withLock { $0 += seconds } }
}

/// Collects the relay's log lines.
final class LogCapture: Sendable {
    private let lines = Locked<[String]>([])
    var sink: @Sendable (String) -> Void { { [self] line in lines.withLock { $0.append(line) } } }
    var all: [String] { lines.withLock { $0 } }
    var pushLines: [String] { all.filter { $0.hasPrefix("push ") } }
}

/// A relay in this process, with the stand-ins it forwards to and a client to ask it.
final class RelayFixture: Sendable {
    let providers: LoopbackProviders
    let server: PushRelayServer
    let client: HTTPClient
    let log: LogCapture

    /// - Parameters:
    ///   - adjust: changes the configuration read from the environment before the server starts.
    init(
        apns: Bool = true, fcm: Bool = true, limiter: (any PushRelayRateLimiter)? = nil,
        adjust: (inout PushRelayConfiguration) -> Void = { _ in }
    ) throws {
        providers = try LoopbackProviders()
        var configuration = try PushRelayConfiguration(environment: relayEnvironment(providers, apns: apns, fcm: fcm))
        adjust(&configuration)
        log = LogCapture()
        server = try PushRelayServer(configuration: configuration, rateLimiter: limiter, log: log.sink)
        client = try HTTPClient(configuration: .init(requestTimeout: .seconds(20), maximumConnectionsPerHost: 64))
    }

    private init(providers: LoopbackProviders, server: PushRelayServer, log: LogCapture) throws {
        self.providers = providers
        self.server = server
        self.log = log
        client = try HTTPClient(configuration: .init(requestTimeout: .seconds(20), maximumConnectionsPerHost: 64))
    }

    /// A relay started with `PushRelayServer.start` (which tries Redis first when the
    /// configuration has it), with `environment` added to the stand-ins' variables.
    static func start(
        environment extra: [String: String] = [:], adjust: (inout PushRelayConfiguration) -> Void = { _ in }
    ) async throws -> RelayFixture {
        try await start(environment: { _ in extra }, adjust: adjust)
    }

    /// `start`, with variables that depend on this fixture's own stand-ins (their CA bundle).
    static func start(
        environment extra: (LoopbackProviders) throws -> [String: String], adjust: (inout PushRelayConfiguration) -> Void = { _ in }
    ) async throws -> RelayFixture {
        let providers = try LoopbackProviders()
        do {
            var configuration = try PushRelayConfiguration(environment: relayEnvironment(providers).merging(try extra(providers)) { $1 })
            adjust(&configuration)
            let log = LogCapture()
            let server = try await PushRelayServer.start(configuration: configuration, log: log.sink)
            return try RelayFixture(providers: providers, server: server, log: log)
        } catch {
            providers.stop()
            throw error
        }
    }

    var url: String { server.url }

    /// POSTs `body` to `/v1/push`.
    func push(_ body: String, headers: HTTPHeaders = ["content-type": "application/json"]) async throws -> HTTPResponse {
        try await client.send(HTTPRequest(method: .post, url: url + "/v1/push", headers: headers, body: Array(body.utf8)))
    }

    func push(_ object: JSONValue) async throws -> HTTPResponse {
        try await push(object.canonicalString)
    }

    /// The requests APNs saw (not counting nothing else).
    var apnsRequests: [LoopbackServer.Request] { providers.apns.requests }
    /// The FCM sends (the token exchange left out).
    var fcmSends: [LoopbackServer.Request] { providers.fcm.requests.filter { $0.path != "/token" } }

    func stop() async {
        await client.shutdown()
        await server.stop(grace: .seconds(2))
        providers.stop()
    }
}

/// A valid iOS push body with overrides.
func iosPush(token: String = mixedCaseToken, envelope: String = sampleEnvelope, extra: [String: JSONValue] = [:]) -> JSONValue {
    var object: [String: JSONValue] = ["platform": "ios", "token": .string(token), "envelope": .string(envelope)]
    for (key, value) in extra { object[key] = value }
    return .object(object)
}

func androidPush(token: String = "fcm:Opaque-Token_1", envelope: String = sampleEnvelope, extra: [String: JSONValue] = [:]) -> JSONValue {
    var object: [String: JSONValue] = ["platform": "android", "token": .string(token), "envelope": .string(envelope)]
    for (key, value) in extra { object[key] = value }
    return .object(object)
}

extension HTTPResponse {
    var json: JSONValue? { try? JSONParser.parse(body) }
    var text: String { String(decoding: body, as: UTF8.self) }
}

extension LoopbackServer.Request {
    /// Request headers without HTTP/2 pseudo-headers, lowercased.
    var regularHeaders: [String: String] {
        var result: [String: String] = [:]
        for header in headers where !header.name.hasPrefix(":") { result[header.name.lowercased()] = header.value }
        return result
    }
}

/// HTTP/1.1 over a plain blocking socket, for what a library client hides: the source address,
/// a declared length with no body, chunked uploads, whether the server closed. Runs on its own
/// thread (never on the concurrency pool).
enum RawHTTP {
    struct Answer: Sendable {
        var status: Int
        var headers: [String: String]
        var body: String
        /// The server closed the connection after the answer (only looked at with `detectClose`).
        var closed: Bool
    }

    /// Connects from `source` (any 127.x address), sends `request` in one go, reads one answer.
    /// Nil when the connection closed without an answer.
    static func exchange(
        port: Int, _ request: String, source: String = "127.0.0.1", timeoutSeconds: Int = 10, detectClose: Bool = false
    ) async -> Answer? {
        do {
            return try await PushThread.run(name: "test-raw-http") {
                exchangeBlocking(
                    port: port, Array(request.utf8), source: source, timeoutSeconds: timeoutSeconds, detectClose: detectClose,
                    expectBody: !request.hasPrefix("HEAD "))
            }
        } catch {
            Issue.record("no thread for the exchange: \(error)")
            return nil
        }
    }

    /// Opens a connection and keeps it (idle) until `close`; nil when refused.
    static func open(port: Int) -> Int32? {
        let fd = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false, closeOnExec: false)
        guard fd >= 0 else { return nil }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// A request line and headers (content-length of `body` unless one is given) and the body.
    static func request(_ method: String, _ path: String, headers: [String] = [], body: String = "") -> String {
        var lines = ["\(method) \(path) HTTP/1.1", "Host: relay.test"] + headers
        if !headers.contains(where: { $0.lowercased().hasPrefix("content-length:") || $0.lowercased().hasPrefix("transfer-encoding:") }),
            !body.isEmpty || method == "POST"
        {
            lines.append("Content-Length: \(body.utf8.count)")
        }
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + body
    }

    private static func exchangeBlocking(
        port: Int, _ bytes: [UInt8], source: String, timeoutSeconds: Int, detectClose: Bool, expectBody: Bool
    ) -> Answer? {
        let fd = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false, closeOnExec: false)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { return nil }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Platform.send(fd, $0.baseAddress.map { $0 + offset }, bytes.count - offset) }
            if sent <= 0 { break }  // the server may stop reading (that is what some tests check)
            offset += sent
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var headerEnd: Int?
        var contentLength = 0
        while true {
            if let end = headerEnd, received.count >= end + contentLength { break }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
            if headerEnd == nil, let range = find([13, 10, 13, 10], in: received) {
                headerEnd = range
                let head = String(decoding: received[0..<range], as: UTF8.self).lowercased()
                for line in head.split(separator: "\r\n") where expectBody && line.hasPrefix("content-length:") {
                    contentLength = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
        }
        guard let end = headerEnd else { return nil }
        let head = String(decoding: received[0..<(end - 4)], as: UTF8.self)
        var lines = head.split(separator: "\r\n").map(String.init)
        guard !lines.isEmpty else { return nil }
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let body = String(decoding: received[end...].prefix(contentLength), as: UTF8.self)
        // Closed: the next read ends the stream (within a second).
        var short = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &short, socklen_t(MemoryLayout<timeval>.size))
        let closed = detectClose && received.count <= end + contentLength && recv(fd, &buffer, 1, 0) == 0
        return Answer(status: status, headers: headers, body: body, closed: closed)
    }

    /// The index just past `needle` in `haystack`.
    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<start + needle.count].elementsEqual(needle) {
            return start + needle.count
        }
        return nil
    }
}

/// The built `hapi-push-relay`, run as an operator runs it.
final class RelayProcess: @unchecked Sendable {
    // @unchecked: `process` is only touched by the test that owns it; output is locked.
    let process = Process()
    private let output = Locked<String>("")
    private let errors = Locked<String>("")

    static var executable: URL {
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = testBinary.deletingLastPathComponent()
        while directory.pathExtension == "xctest" || directory.lastPathComponent == "MacOS" {
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("hapi-push-relay")
    }

    init(environment: [String: String], arguments: [String] = []) throws {
        process.executableURL = Self.executable
        process.arguments = arguments
        process.environment = SanitizerOptions.adding(to: environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a })
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let output = output
        let errors = errors
        out.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            output.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        err.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            errors.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
    }

    var stdout: String { output.withLock { $0 } }
    var stderr: String { errors.withLock { $0 } }

    /// Waits for `text` on stdout (10 s at most).
    func waitFor(_ text: String, seconds: Double = 10) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if stdout.contains(text) { return true }
            if !process.isRunning { return stdout.contains(text) }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// The URL of the `listening on http://HOST:PORT` line, once it is printed.
    func listeningURL() async -> String? {
        guard await waitFor("listening on http://") else { return nil }
        guard let range = stdout.range(of: "listening on ") else { return nil }
        return String(stdout[range.upperBound...].prefix { !$0.isWhitespace })
    }

    /// The port part of `url`.
    static func port(of url: String) -> Int? { url.split(separator: ":").last.flatMap { Int($0) } }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits for the exit (on its own thread) and returns the status; nil after `seconds`.
    func exitStatus(seconds: Double = 15) async -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        guard !process.isRunning else { return nil }
        // Let the readers drain what the process wrote last.
        try? await Task.sleep(for: .milliseconds(50))
        // Killed by a signal is not an exit status: report it as 128 + the signal, as a shell does.
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }

    func terminate() {
        if process.isRunning { process.terminate() }
    }
}

/// Two lowercase hex digits.
func hex2(_ value: Int) -> String {
    let text = String(value & 0xFF, radix: 16)
    return text.count == 1 ? "0" + text : text
}

/// A distinct valid iOS token per index.
func iosToken(_ index: Int) -> String {
    String(repeating: "0", count: 56) + [index >> 24, index >> 16, index >> 8, index].map(hex2).joined()
}
