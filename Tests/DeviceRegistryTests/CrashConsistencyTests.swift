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
import Testing

@testable import DeviceRegistry

// kill -9 at random moments: a child (`hapi-push-testsupport`) writes and prints one line per
// acknowledged write; the test kills it after a random number of lines or a random delay, then
// checks that the file is whole and holds everything acknowledged before the kill.

@Suite struct CrashConsistencyTests {
    static let rounds = 20

    @Test func registryKilledAtRandomMomentsStaysWholeAndKeepsEveryAcknowledgedRow() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("crash.sqlite3")
        let writer = builtExecutable("hapi-push-testsupport")
        var acknowledged: Set<String> = []
        var log: [String] = []
        for round in 0..<Self.rounds {
            let moment = KillMoment.random(round: round, maximumLines: 400)
            let child = try AckingChild(
                executable: writer,
                arguments: ["registry-writer", "--path", path, "--namespace", "ns", "--count", "1000000", "--prefix", "r\(round)", "--ack"])
            let lines = try child.kill(at: moment)
            let acks = lines.compactMap { $0.hasPrefix("ack ") ? String($0.dropFirst(4)) : nil }
            acknowledged.formUnion(acks)
            log.append("round \(round): \(moment), \(acks.count) acks, \(child.ended)")

            // Killed before it created the file (a kill after 0 lines, or within its first
            // milliseconds): nothing can have been acknowledged, and there is nothing to reopen.
            guard FileManager.default.fileExists(atPath: path) else {
                #expect(acknowledged.isEmpty, "round \(round) (\(moment)): \(acknowledged.count) rows acknowledged, but the file is gone")
                continue
            }
            // Reopen as the next hub would: recovery of the WAL, then a full integrity check.
            let db = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 5000)
            let integrity = try db.query("PRAGMA integrity_check")
            #expect(integrity == [[.text("ok")]], "round \(round) (\(moment)): \(integrity)")
            // Killed after it created the file but before the schema was in: nothing acknowledged.
            guard try !db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'fcm_devices'").isEmpty else {
                #expect(acknowledged.isEmpty, "round \(round) (\(moment)): \(acknowledged.count) rows acknowledged, but no table")
                continue
            }
            let rows = try db.query("SELECT device_id FROM fcm_devices WHERE namespace = ?", [.text("ns")])
            let present = Set(rows.compactMap { $0.first?.text })
            let missing = acknowledged.subtracting(present)
            #expect(missing.isEmpty, "round \(round) (\(moment)): \(missing.count) acknowledged rows lost, e.g. \(missing.sorted().prefix(5))")
            #expect(rows.count == present.count, "duplicate device ids")
        }
        // The store opens the survivor normally and can keep writing.
        let store = try SQLitePushDeviceStore(configuration: .init(path: path))
        _ = try await store.upsert(try request(deviceId: "after-crashes", token: "after-crashes-token"), now: 1)
        #expect(try await store.devices(namespace: "ns", platforms: nil).count >= acknowledged.count + 1)
        print("crash-consistency registry: \(Self.rounds) kills, \(acknowledged.count) acknowledged rows all present\n  " + log.joined(separator: "\n  "))
    }

    @Test func settingsFileKilledAtRandomMomentsIsAlwaysOneWholeVersion() throws {
        let directory = TemporaryDirectory()
        let settingsPath = directory.file("settings.json")
        try Data("{\n  \"theme\": \"dark\"\n}\n".utf8).write(to: URL(fileURLWithPath: settingsPath))
        let writer = builtExecutable("hapi-push-testsupport")
        var acknowledged: Set<String> = ["theme"]
        var log: [String] = []
        for round in 0..<Self.rounds {
            let moment = KillMoment.random(round: round, maximumLines: 12)
            let child = try AckingChild(
                executable: writer,
                arguments: ["settings-writer", "--dir", directory.path, "--key", "r\(round)", "--value", "v\(round)", "--count", "100000"])
            let lines = try child.kill(at: moment)
            let keys = lines.filter { $0.hasPrefix("added ") }.flatMap { $0.dropFirst(6).split(separator: ",").map(String.init) }
            acknowledged.formUnion(keys)
            log.append("round \(round): \(moment), \(keys.count) keys acknowledged, \(child.ended)")

            let bytes = try #require(FileManager.default.contents(atPath: settingsPath), "round \(round): settings.json vanished")
            let parsed = try? JSONParser.parse([UInt8](bytes))
            let object = try #require(parsed, "round \(round) (\(moment)): not a JSON object: \(String(decoding: bytes, as: UTF8.self).prefix(200))")
            try #require(object.objectValue != nil, "round \(round) (\(moment)): not a JSON object")
            let missing = acknowledged.filter { object[$0] == nil }
            #expect(missing.isEmpty, "round \(round) (\(moment)): acknowledged keys lost: \(missing.sorted().prefix(5))")
            #expect(object["theme"] == "dark")
            for key in keys { #expect(object[key]?.stringValue == "v\(round)") }
        }
        // A writer that runs to completion cleans up what the killed ones abandoned.
        let final = try AckingChild(
            executable: writer, arguments: ["settings-writer", "--dir", directory.path, "--key", "final", "--value", "yes"])
        let finalLines = try final.waitForExit()
        #expect(finalLines == ["added final"])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
        let object = try JSONParser.parse([UInt8](Data(contentsOf: URL(fileURLWithPath: settingsPath))))
        #expect(acknowledged.union(["final"]).allSatisfy { object[$0] != nil })
        print("crash-consistency settings: \(Self.rounds) kills, \(acknowledged.count) acknowledged keys all present\n  " + log.joined(separator: "\n  "))
    }
}

/// When to `kill -9` the child.
enum KillMoment: CustomStringConvertible {
    /// After reading this many acknowledgement lines.
    case afterLines(Int)
    /// After this many milliseconds from the spawn (possibly before the first write, or while
    /// the store is being created).
    case afterDelay(milliseconds: Int)

    /// Alternates the kinds so each is exercised whatever the random draw.
    static func random(round: Int, maximumLines: Int) -> KillMoment {
        switch round % 4 {
        case 0, 2: .afterLines(Int.random(in: 0...maximumLines))
        // Often during start-up: opening, creating or recovering the file.
        case 1: .afterDelay(milliseconds: Int.random(in: 0...10))
        default: .afterDelay(milliseconds: Int.random(in: 0...120))
        }
    }

    var description: String {
        switch self {
        case .afterLines(let count): "kill after \(count) lines"
        case .afterDelay(let ms): "kill after \(ms) ms"
        }
    }
}

/// A child process whose stdout the test reads line by line (raw reads with deadlines, so a
/// stuck child fails the test instead of hanging it).
final class AckingChild {
    let process = Process()
    private let output = Pipe()
    private var pending: [UInt8] = []
    private var lines: [String] = []
    private var sawEOF = false
    private(set) var ended = "running"

    init(executable: String, arguments: [String], input: Pipe? = nil) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let input { process.standardInput = input }
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning { Platform.kill(process.processIdentifier, SIGKILL) }
    }

    /// Kills the child at `moment` and returns every complete line it printed before dying.
    func kill(at moment: KillMoment) throws -> [String] {
        let deadline = ContinuousClock.now + .seconds(10)
        switch moment {
        case .afterLines(let count):
            while lines.count < count, !sawEOF, ContinuousClock.now < deadline { readAvailable(waitMilliseconds: 50) }
        case .afterDelay(let milliseconds):
            usleep(UInt32(milliseconds) * 1000)
        }
        let wasRunning = process.isRunning
        Platform.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        ended =
            process.terminationReason == .uncaughtSignal
            ? "killed" : "exited \(process.terminationStatus)\(wasRunning ? "" : " before the kill")"
        // Everything the child wrote is in the pipe now: drain it.
        while !sawEOF, ContinuousClock.now < deadline {
            if !readAvailable(waitMilliseconds: 0) { break }
        }
        #expect(ContinuousClock.now < deadline, "the child did not reach the kill moment in 10 s")
        return lines
    }

    /// Waits (up to 10 s) until the child printed `line`, or ended; returns the lines so far.
    func waitForLine(_ line: String) throws -> [String] {
        let deadline = ContinuousClock.now + .seconds(10)
        while !lines.contains(line), !sawEOF, ContinuousClock.now < deadline { readAvailable(waitMilliseconds: 50) }
        return lines
    }

    /// Waits for the child to exit on its own and returns its lines.
    func waitForExit(seconds: Int = 10) throws -> [String] {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !sawEOF, ContinuousClock.now < deadline { readAvailable(waitMilliseconds: 50) }
        process.waitUntilExit()
        ended = "exited \(process.terminationStatus)"
        return lines
    }

    /// Reads what is there (waiting up to `waitMilliseconds` for something); false when nothing
    /// was read.
    @discardableResult
    private func readAvailable(waitMilliseconds: Int32) -> Bool {
        let fd = output.fileHandleForReading.fileDescriptor
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, waitMilliseconds) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count <= 0 {
            if count == 0 || errno != EINTR { sawEOF = true }
            return false
        }
        pending += buffer[..<count]
        while let newline = pending.firstIndex(of: 0x0A) {
            lines.append(String(decoding: pending[..<newline], as: UTF8.self))
            pending.removeSubrange(...newline)
        }
        return true
    }
}
