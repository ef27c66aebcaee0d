import Foundation
import Testing
import PushTestSupport

/// Runs the built `hapi-push` binary, as an operator's script would.
struct CLIResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

enum CLI {
    /// The `hapi-push` executable built beside this test bundle.
    static var executable: URL {
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = testBinary.deletingLastPathComponent()
        // The test runner may be inside a `.xctest` bundle directory.
        while directory.pathExtension == "xctest" || directory.lastPathComponent == "MacOS" {
            directory = directory.deletingLastPathComponent()
        }
        return directory.appendingPathComponent("hapi-push")
    }

    /// Runs the CLI; `input`, when given, is its standard input (small: written before reading).
    /// With `timeout`, a CLI still running then is killed (SIGKILL) and the result's status is
    /// `CLI.killedStatus`: a hang fails the test instead of blocking the suite.
    static func run(
        _ arguments: [String], environment: [String: String]? = nil, input: String? = nil, timeout: Duration? = nil,
        closedInput: Bool = false, executable: URL? = nil
    ) throws -> CLIResult {
        let process = Process()
        process.executableURL = executable ?? Self.executable
        process.arguments = arguments
        if let environment { process.environment = SanitizerOptions.adding(to: environment) }
        let out = Pipe()
        let err = Pipe()
        let stdin = Pipe()
        process.standardOutput = out
        process.standardError = err
        if input != nil || closedInput { process.standardInput = stdin }
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        if input != nil || closedInput { try stdin.fileHandleForWriting.close() }
        let killed = Killer()
        if let timeout {
            let pid = process.processIdentifier
            let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                guard process.isRunning else { return }
                killed.mark()
                kill(pid, SIGKILL)
            }
        }
        // Both pipes at once: a CLI that fills one (a sanitizer's report on stderr) while we
        // wait on the other would never exit.
        let errorOutput = PipeDrain(err.fileHandleForReading)
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = errorOutput.wait()
        process.waitUntilExit()
        return CLIResult(
            status: killed.value ? killedStatus : process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// The status of a CLI killed at its timeout.
    static let killedStatus: Int32 = -9

    /// Reads a pipe to its end on a thread of its own (an NSCondition: pthread, so TSan sees it).
    private final class PipeDrain: @unchecked Sendable {
        private let condition = NSCondition()
        private var data: Data?

        init(_ handle: FileHandle) {
            Thread.detachNewThread { [self] in
                let read = handle.readDataToEndOfFile()
                condition.lock()
                data = read
                condition.broadcast()
                condition.unlock()
            }
        }

        func wait() -> Data {
            condition.lock()
            defer { condition.unlock() }
            while data == nil { condition.wait() }
            return data ?? Data()
        }
    }

    private final class Killer: @unchecked Sendable {
        private let lock = NSLock()
        private var killed = false
        func mark() { lock.withLock { killed = true } }
        var value: Bool { lock.withLock { killed } }
    }
}

@Suite struct EnvelopeCLITests {
    let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
    let golden =
        "AAECAwQFBgcICQoLPCC0dKGc4CGvE/Lq1ZBYC+ykp12eCyoIGkvH5nIHdMBgc9qqyrNh8RvKXdeqtgoUzCoF/im/zLR28wgjOpDEzNweshOnvUNDJnbiL7/GLMQa/rASE0FpSo+Y/6gB0sShxRvIOvgJGpKK+MjRlFlu"
    let plaintext = #"{"body":"Ready for input","contractVersion":"1","sessionId":"s1","title":"HAPI","type":"ready"}"#

    @Test func sealWithFixedNoncePrintsTheGoldenEnvelope() throws {
        let result = try CLI.run(["envelope", "seal", "--key", key, "--nonce-hex", "000102030405060708090a0b", "--plaintext", plaintext])
        #expect(result.status == 0)
        #expect(result.stdout == golden + "\n")
    }

    @Test func sealFromPayloadFileUsesCanonicalJSON() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("payload-\(UUID().uuidString).json")
        try Data("{\n  \"type\": \"ready\", \"title\": \"HAPI\",\n \"sessionId\": \"s1\", \"contractVersion\": \"1\", \"body\": \"Ready for input\"}\n".utf8)
            .write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try CLI.run(["envelope", "seal", "--key", key, "--nonce-hex", "000102030405060708090a0b", "--payload-file", file.path])
        #expect(result.status == 0)
        #expect(result.stdout == golden + "\n")
    }

    @Test func sealWithoutNonceIsRandomAndOpens() throws {
        let first = try CLI.run(["envelope", "seal", "--key", key, "--plaintext", plaintext])
        let second = try CLI.run(["envelope", "seal", "--key", key, "--plaintext", plaintext])
        #expect(first.status == 0 && second.status == 0)
        #expect(first.stdout != second.stdout)
        let opened = try CLI.run(["envelope", "open", "--key", key, "--envelope", first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
        #expect(opened.status == 0)
        #expect(opened.stdout == plaintext + "\n")
    }

    @Test func openPrintsThePlaintext() throws {
        let result = try CLI.run(["envelope", "open", "--key", key, "--envelope", golden])
        #expect(result.status == 0)
        #expect(result.stdout == plaintext + "\n")
    }

    @Test(arguments: [
        ["envelope", "seal", "--key", "AAAA", "--plaintext", "x"],
        ["envelope", "seal", "--key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "--nonce-hex", "0001", "--plaintext", "x"],
        ["envelope", "seal", "--key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "--nonce-hex", "zz0102030405060708090a0b", "--plaintext", "x"],
        ["envelope", "seal", "--key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="],
        ["envelope", "seal", "--key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "--plaintext", "x", "--payload-file", "/x"],
        ["envelope", "seal", "--key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "--payload-file", "/nonexistent/payload.json"],
        ["envelope", "open", "--key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "--envelope", "AAAA"],
        ["envelope", "open", "--key", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "--envelope", "not base64!"],
        ["envelope", "open", "--envelope", "AAAA"],
        ["envelope", "frobnicate"],
        ["envelope", "seal", "--bogus", "1"],
        ["no-such-command"],
        [],
    ])
    func usageErrorsExitTwoWithOneLine(_ arguments: [String]) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 2, "\(arguments)")
        #expect(result.stdout.isEmpty || arguments.isEmpty)
        if !arguments.isEmpty {
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(result.stderr.hasPrefix("hapi-push: "))
        }
    }

    @Test func payloadFileMustBeAnObject() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("payload-\(UUID().uuidString).json")
        try Data("[1,2]".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try CLI.run(["envelope", "seal", "--key", key, "--payload-file", file.path])
        #expect(result.status == 2)
        #expect(result.stderr.contains("JSON object"))
    }

    @Test(arguments: [["--help"], ["envelope", "--help"], ["envelope", "seal", "--help"], ["demo", "--help"]])
    func helpPrintsUsage(_ arguments: [String]) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 0)
        #expect(result.stdout.contains("Usage"))
    }

    @Test func wrongKeyDoesNotPrintTheKeyOrPlaintext() throws {
        let other = "AQECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
        let result = try CLI.run(["envelope", "open", "--key", other, "--envelope", golden])
        #expect(result.status == 2)
        #expect(!result.stderr.contains(other))
        #expect(!result.stderr.contains("Ready for input"))
    }
}
