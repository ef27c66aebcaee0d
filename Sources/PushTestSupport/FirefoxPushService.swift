import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushSync

/// Debian's Firefox ESR, headless with a fresh profile and kept off the network, subscribed
/// through a push service of ours (scripts/firefox-push-service.py: Firefox's WebSocket push
/// protocol towards the browser, Mozilla's push-service checks towards the sender, over HTTPS
/// with a throwaway CA). The page's service worker reports the bytes it decrypted.
///
/// Every process is stopped by `stop()` (also from `deinit`): the script kills Firefox's whole
/// process group, and Firefox gets SIGKILL from the kernel should the script die first.
public final class FirefoxPushService: @unchecked Sendable {
    // @unchecked: `process` and `input` are set once in init; the events are behind a lock.
    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// One line the script printed: its `event` and the other members (strings as they are,
    /// everything else as JSON text).
    public struct Event: Sendable, CustomStringConvertible {
        public let name: String
        public let fields: [String: String]
        public subscript(_ key: String) -> String? { fields[key] }
        public var description: String { "\(name) \(fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.prefix(120))" })" }
    }

    public static let python = "/usr/bin/python3"
    public static let firefox = "/usr/bin/firefox-esr"
    /// The script, beside this package's sources.
    public static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/firefox-push-service.py").path

    public let directory: String
    /// The throwaway CA that signed the push service's certificate (for `HAPI_PUSH_CA_FILE`).
    public let caFile: String
    /// `https://127.0.0.1:<port>`: where the browser's endpoints point.
    public private(set) var pushOrigin = ""
    private let process: Process
    private let input: FileHandle
    private let events = Locked<[Event]>([])
    private let stopped = Locked<Bool>(false)

    /// Starts the script, which starts Firefox. Throws with the reason when Python's packages,
    /// Firefox or the script's servers are not there.
    public init(deadline: Duration = .seconds(150)) throws {
        for (path, package) in [(Self.python, "python3"), (Self.firefox, "firefox-esr")] where !FileManager.default.isExecutableFile(atPath: path) {
            throw StartError(description: "\(path) is missing: install Debian's \(package) (make test installs it)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-firefox-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        do {
            try TestServerFiles.makeCertificates(in: directory, caName: "hapi push service CA", serverName: "127.0.0.1", subjectAltNames: "IP:127.0.0.1")
        } catch {
            throw StartError(description: error.description)
        }
        caFile = directory + "/ca.pem"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.python)
        let seconds = Double(deadline.components.seconds)
        process.arguments = [Self.script, "--dir", directory, "--firefox", Self.firefox, "--deadline", String(seconds)]
        process.environment = ["PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"]
        let output = Pipe()
        let input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        _ = FileManager.default.createFile(atPath: directory + "/script.log", contents: nil)
        process.standardError = FileHandle(forWritingAtPath: directory + "/script.log") ?? FileHandle.nullDevice
        try process.run()
        self.process = process
        self.input = input.fileHandleForWriting
        let events = self.events
        let reader = output.fileHandleForReading
        Thread.detachNewThread {
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 10) {
                    let line = pending[pending.startIndex..<newline]
                    pending = Data(pending[(newline + 1)...])
                    if let event = Self.parse(Data(line)) { events.withLock { $0.append(event) } }
                }
            }
        }
    }

    deinit { stop() }

    static func parse(_ line: Data) -> Event? {
        guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any], let name = object["event"] as? String else { return nil }
        var fields: [String: String] = [:]
        for (key, value) in object where key != "event" {
            if let text = value as? String {
                fields[key] = text
            } else if let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys, .withoutEscapingSlashes]) {
                fields[key] = String(decoding: data, as: UTF8.self)
            }
        }
        return Event(name: name, fields: fields)
    }

    /// Where the next `waitFor` starts looking.
    public var mark: Int { events.withLock { $0.count } }

    public var all: [Event] { events.withLock { $0 } }

    /// The first event named `name` at or after `from` that `matches`, waiting up to `timeout`.
    public func waitFor(
        _ name: String, from: Int = 0, timeout: Duration = .seconds(30), where matches: @Sendable (Event) -> Bool = { _ in true }
    ) async throws -> Event {
        let clock = ContinuousClock()
        let end = clock.now + timeout
        while true {
            let found = events.withLock { list in list.dropFirst(from).first { $0.name == name && matches($0) } }
            if let found { return found }
            if let failure = events.withLock({ list in list.dropFirst(from).first { $0.name == "page" && $0["kind"] == "error" } }) {
                throw StartError(description: "the page failed: \(failure)")
            }
            guard clock.now < end, process.isRunning else {
                throw StartError(description: "no \(name) event within \(timeout) (script \(process.isRunning ? "running" : "exited")); events: \(all.suffix(12)); log: \(logTail())")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Firefox's push client connected and said hello (before that, `subscribe()` never settles).
    public func waitForBrowser(timeout: Duration = .seconds(60)) async throws {
        pushOrigin = try await waitFor("ready", timeout: .seconds(10))["push"] ?? ""
        _ = try await waitFor("hello", timeout: timeout)
        _ = try await waitFor("page", timeout: timeout) { $0["kind"] == "ready" }
    }

    /// The page subscribes with `applicationServerKey`, as the hub's web client does on load:
    /// a subscription made with another key is unsubscribed first and made again. Returns
    /// `PushSubscription.toJSON()` and the endpoint given up (nil when none was).
    public func subscribe(vapidPublicKey: String, timeout: Duration = .seconds(60)) async throws -> (json: String, staleEndpoint: String?) {
        let start = mark
        try send(#"{"op":"subscribe","key":"\#(vapidPublicKey)"}"#)
        let event = try await waitFor("page", from: start, timeout: timeout) { $0["kind"] == "subscribed" }
        guard let json = event["subscription"] else { throw StartError(description: "no subscription in \(event)") }
        return (json, event["staleEndpoint"].flatMap { $0 == "null" ? nil : $0 })
    }

    /// The bytes the service worker reported for the next push after `from`.
    public func received(from: Int, timeout: Duration = .seconds(20)) async throws -> [UInt8] {
        let event = try await waitFor("received", from: from, timeout: timeout)
        return Self.bytes(hex: event["hex"] ?? "")
    }

    private func send(_ line: String) throws {
        try input.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Stops the script and Firefox; true when no process of Firefox's group is left.
    @discardableResult
    public func stop() -> Bool {
        guard !stopped.withLock({ already in defer { already = true }; return already }) else { return !firefoxLeft() }
        try? input.close()
        let clock = ContinuousClock()
        let end = clock.now + .seconds(15)
        while process.isRunning, clock.now < end { usleep(50_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        if let pid = firefoxPID, firefoxLeft() { kill(-pid, SIGKILL) }
        let clean = !firefoxLeft() && all.last { $0.name == "stopped" }?["firefoxLeft"] == "false"
        if clean { try? FileManager.default.removeItem(atPath: directory) }
        return clean
    }

    private var firefoxPID: Int32? { all.first { $0.name == "firefox" }?["pid"].flatMap { Int32($0) } }

    private func firefoxLeft() -> Bool {
        guard let pid = firefoxPID else { return false }
        return kill(-pid, 0) == 0
    }

    /// The end of what the script and Firefox wrote, for a failure's message.
    public func logTail() -> String {
        let texts = ["script.log", "firefox.log"].compactMap { try? String(contentsOfFile: directory + "/" + $0, encoding: .utf8) }
        return texts.map { String($0.suffix(800)) }.joined(separator: "\n---\n")
    }

    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8?
        for c in hex.utf8 {
            let v: UInt8
            switch c {
            case 48...57: v = c - 48
            case 97...102: v = c - 87
            default: continue
            }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        return out
    }
}
