import Foundation
import PushEnvelope
import PushLoopbackServer
import PushTestSupport
import Testing

/// The CLI as a careless or hostile operator, or a hostile device or provider, would drive it
/// (issue 15): every run is bounded, so a hang fails instead of blocking the suite.
@Suite struct HostileInputCLITests {
    static let bound: Duration = .seconds(60)
    let key = Base64.encode([UInt8](repeating: 7, count: 32))

    func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-hostile-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func write(_ text: String, to path: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    func diagnostics(_ result: CLIResult) throws -> [JSONValue] {
        try #require(try JSONParser.parse(result.stdout)["diagnostics"]?.arrayValue)
    }

    // MARK: 1. Encrypted keys

    /// OpenSSL's default callback would prompt "Enter PEM pass phrase:" (on the terminal, else
    /// on stderr) and block: the key is refused by name instead, without a prompt.
    @Test func encryptedKeysAreRefusedByNameWithoutAPrompt() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for traditional in [false, true] {
            let apnsPEM = try #require(TestKeys.encryptedPEM(traditional: traditional))
            let accountPEM = try #require(TestKeys.encryptedPEM(rsa: true, traditional: traditional))
            #expect(apnsPEM.contains(traditional ? "Proc-Type: 4,ENCRYPTED" : "BEGIN ENCRYPTED PRIVATE KEY"))
            try write(apnsPEM, to: dir + "/AuthKey.p8")
            let account = JSONValue.object([
                "type": "service_account", "project_id": "p", "client_email": "a@p.iam.gserviceaccount.com", "private_key": .string(accountPEM),
            ])
            try write(account.canonicalString, to: dir + "/sa.json")
            let environment = [
                "HOME": dir, "HAPI_HOME": dir, "HAPI_IOS_PUSH": "apns", "APNS_KEY_P8_PATH": dir + "/AuthKey.p8", "APNS_KEY_ID": "K",
                "APNS_TEAM_ID": "T", "APNS_BUNDLE_ID": "b.id", "HAPI_ANDROID_PUSH": "fcm", "FCM_SERVICE_ACCOUNT_PATH": dir + "/sa.json",
            ]
            let config = try CLI.run(["config", "--json", "--no-persist"], environment: environment, timeout: Self.bound, closedInput: true)
            #expect(config.status == 0, "status \(config.status) (\(CLI.killedStatus) = killed at the bound): \(config.stderr)")
            #expect(!config.stderr.lowercased().contains("pass phrase"), "\(config.stderr)")
            let found = try diagnostics(config)
            for setting in ["apnsKeyP8Path", "fcmServiceAccountPath"] {
                let message = found.first { $0["setting"] == .string(setting) }?["message"]?.stringValue ?? ""
                #expect(message.contains("encrypted keys are not supported: export it without a passphrase"), "\(setting): \(message)")
            }
            let report = try JSONParser.parse(config.stdout)
            #expect(report["ios"]?["transport"] == "off")
            #expect(report["android"]?["transport"] == "off")

            let send = try CLI.run(
                ["send", "--namespace", "ns", "--type", "ready", "--session-id", "s", "--title", "t", "--body", "b"], environment: environment,
                timeout: Self.bound, closedInput: true)
            #expect(send.status == 0, "\(send.stderr)")
            #expect(!send.stderr.lowercased().contains("pass phrase"))
        }
    }

    // MARK: 2. A bad HAPI_PUSH_CA_FILE

    /// A system trust store that holds the stand-ins' CAs (OpenSSL's hashed directory through
    /// `SSL_CERT_DIR`), so the stand-ins play servers signed by public CAs.
    func publicRoots(_ providers: LoopbackProviders) throws -> String {
        let directory = providers.directory + "/system-roots"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (index, server) in [providers.relay, providers.apns, providers.fcm].enumerated() {
            let path = try #require(server.caFile)
            try FileManager.default.copyItem(atPath: path, toPath: directory + "/ca-\(index).pem")
        }
        let rehash = Process()
        rehash.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        rehash.arguments = ["rehash", directory]
        try rehash.run()
        rehash.waitUntilExit()
        try #require(rehash.terminationStatus == 0, "openssl rehash failed")
        return directory
    }

    @Test func aBadCAFileIsReportedIgnoredAndPublicChannelsStayUp() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let roots = try publicRoots(providers)
        let keyFile = providers.directory + "/key-not-cert.pem"
        try write(try #require(TestKeys.p256()).privateKeyPEM, to: keyFile)
        let empty = providers.directory + "/empty.pem"
        try write("", to: empty)
        let cases: [(String, String)] = [
            (empty, "is empty"), (keyFile, "private key, not a certificate"), (providers.directory, "is a directory"),
            ("/dev/zero", "not a regular file"),
        ]
        for (index, (path, why)) in cases.enumerated() {
            let dir = providers.directory + "/hub-\(index)"
            var environment = providers.environment(iosMode: "relay", androidMode: "relay", dataDirectory: dir)
            environment["HAPI_PUSH_CA_FILE"] = path
            environment["SSL_CERT_DIR"] = roots
            let config = try CLI.run(["config", "--json"], environment: environment, timeout: Self.bound, closedInput: true)
            #expect(config.status == 0)
            let message = try diagnostics(config).first { $0["setting"] == "pushCaFile" }?["message"]?.stringValue ?? ""
            #expect(message.contains(why) && message.contains("ignored"), "\(path): \(message)")

            let register = try CLI.run(
                ["devices", "register", "--namespace", "ns", "--platform", "ios", "--device-id", "d", "--token", String(repeating: "ab", count: 32),
                 "--push-key", key], environment: environment, timeout: Self.bound)
            #expect(register.status == 0, "\(register.stderr)")
            let send = try CLI.run(
                ["send", "--namespace", "ns", "--type", "ready", "--session-id", "s", "--title", "t", "--body", "b", "--json"],
                environment: environment, timeout: Self.bound, closedInput: true)
            #expect(send.status == 0, "\(path): \(send.stderr)")
            #expect(send.stderr.contains("pushCaFile"), "the send names the ignored file: \(send.stderr)")
            let deliveries = try JSONParser.parse(send.stdout)["deliveries"]?.arrayValue ?? []
            #expect(deliveries.first?["outcome"] == "sent", "\(path): \(send.stdout)")
        }
    }

    // MARK: 3. A failed first-sight save

    /// Runs `arguments` with `directory` mounted read-only in a private mount namespace (as
    /// root: chmod does not stop root), or with the directory made read-only (not root).
    func runReadOnly(_ directory: String, _ arguments: [String], environment: [String: String]) throws -> CLIResult {
        guard geteuid() == 0 else {
            chmod(directory, 0o500)
            defer { chmod(directory, 0o700) }
            return try CLI.run(arguments, environment: environment, timeout: Self.bound, closedInput: true)
        }
        let quoted = ([CLI.executable.path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let script = "/usr/bin/mount --bind '\(directory)' '\(directory)' && /usr/bin/mount -o remount,ro,bind '\(directory)' && exec \(quoted)"
        return try CLI.run(
            ["-m", "/bin/sh", "-c", script], environment: environment, timeout: Self.bound, closedInput: true,
            executable: URL(fileURLWithPath: "/usr/bin/unshare"))
    }

    @Test func aReadOnlyDataDirectoryWarnsAndUsesTheValues() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let environment = ["HOME": dir, "HAPI_HOME": dir, "HAPI_IOS_PUSH": "off", "HAPI_ANDROID_PUSH": "off"]
        let config = try runReadOnly(dir, ["config", "--json"], environment: environment)
        #expect(config.status == 0, "\(config.stderr)")
        let report = try JSONParser.parse(config.stdout)
        #expect(report["ios"]?["transport"] == "off")
        let warning = try diagnostics(config).first { $0["setting"] == "settings.json" }
        #expect(warning?["level"] == "warning")
        let text = warning?["message"]?.stringValue ?? ""
        #expect(text.contains("were not saved"), "\(config.stdout)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/settings.json"))
    }

    /// An immutable settings.json (`chattr +i` as root; without root, a settings.json that is
    /// a link to a missing directory, which no write can go through): `send` dispatches with the
    /// environment's values and warns.
    @Test func anImmutableSettingsFileDoesNotStopASend() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let dir = providers.directory + "/hub"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let environment = providers.environment(iosMode: "relay", androidMode: "relay", dataDirectory: dir)
        let register = try CLI.run(
            ["devices", "register", "--namespace", "ns", "--platform", "ios", "--device-id", "d", "--token", String(repeating: "cd", count: 32),
             "--push-key", key], environment: environment, timeout: Self.bound)
        #expect(register.status == 0)
        let immutable = geteuid() == 0
        if immutable {
            try write(#"{"theme":"dark"}"#, to: dir + "/settings.json")
            try #require(try run("/usr/bin/chattr", ["+i", dir + "/settings.json"]) == 0, "chattr +i failed: no immutable files here")
        } else {
            try FileManager.default.createSymbolicLink(atPath: dir + "/settings.json", withDestinationPath: dir + "/missing/settings.json")
        }
        defer { if immutable { _ = try? run("/usr/bin/chattr", ["-i", dir + "/settings.json"]) } }
        let send = try CLI.run(
            ["send", "--namespace", "ns", "--type", "ready", "--session-id", "s", "--title", "t", "--body", "b", "--json"], environment: environment,
            timeout: Self.bound, closedInput: true)
        #expect(send.status == 0, "\(send.stderr)")
        #expect(send.stderr.contains("were not saved"), "\(send.stderr)")
        #expect(try JSONParser.parse(send.stdout)["deliveries"]?.arrayValue?.first?["outcome"] == "sent", "\(send.stdout)")
        if immutable { #expect(FileManager.default.contents(atPath: dir + "/settings.json") == Data(#"{"theme":"dark"}"#.utf8)) }
    }

    func run(_ executable: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    // MARK: 6. Terminal injection

    /// A device id holding ESC, BEL, CR/LF, DEL and C1 controls (as a remote device may send)
    /// reaches the terminal escaped in `devices register`, `devices list` and `send`; a relay
    /// answer with control characters and an echoed token is sanitized the same way.
    @Test func controlCharactersNeverReachTheTerminal() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let dir = providers.directory + "/hub"
        let environment = providers.environment(iosMode: "relay", androidMode: "relay", dataDirectory: dir)
        let token = String(repeating: "e1", count: 32)
        let hostile = "evil\u{1B}[2J\u{07}\r\nhapi-push: forged\u{7F}\u{9B}31m\u{202E}"
        let register = try CLI.run(
            ["devices", "register", "--namespace", "ns\u{1B}]0;title\u{07}", "--platform", "ios", "--device-id", hostile, "--token", token,
             "--push-key", key], environment: environment, timeout: Self.bound)
        #expect(register.status == 0, "\(register.stderr)")
        providers.relay.respond { _ in
            .text(status: 400, #"{"ok":false,"code":"bad\u001b[31m_request","message":"token \#(token) is \u001b]52;c;bad\u0007 \#(String(repeating: "x", count: 3000))"}"#)
        }
        let namespace = "ns\u{1B}]0;title\u{07}"
        let outputs = [
            register.stdout,
            try CLI.run(["devices", "list", "--namespace", namespace], environment: environment, timeout: Self.bound).stdout,
            try CLI.run(["devices", "list", "--namespace", namespace, "--json"], environment: environment, timeout: Self.bound).stdout,
            try CLI.run(
                ["send", "--namespace", namespace, "--type", "ready", "--session-id", "s", "--title", "t", "--body", "b"], environment: environment,
                timeout: Self.bound, closedInput: true).stdout,
            try CLI.run(
                ["send", "--namespace", namespace, "--type", "ready", "--session-id", "s", "--title", "t", "--body", "b", "--json"],
                environment: environment, timeout: Self.bound, closedInput: true).stdout,
        ]
        for output in outputs {
            #expect(!output.isEmpty)
            let controls = output.unicodeScalars.filter { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) || $0 == "\u{202E}" }
            #expect(controls.isEmpty, "raw controls \(controls.map { String($0.value, radix: 16) }) in \(output.debugDescription)")
            #expect(!output.split(separator: "\n").contains { $0.hasPrefix("hapi-push: forged") })
            #expect(!output.contains(token))
        }
        #expect(outputs[0].contains(#"evil\x1B[2J\x07\r\nhapi-push: forged\x7F\x9B31m\u{202E}"#), "\(outputs[0])")
        // The JSON still carries the exact id for a parser.
        #expect(try JSONParser.parse(outputs[2]).arrayValue?.first?["deviceId"] == .string(hostile))
        let reason = try JSONParser.parse(outputs[4])["deliveries"]?.arrayValue?.first?["reason"]?.stringValue ?? ""
        #expect(reason.hasPrefix(#"bad\x1B[31m_request: token [redacted] is \x1B]52;c;bad\x07 "#), "\(reason)")
        #expect(reason.count < 300, "the provider's 3 KB message is capped: \(reason.count)")
    }

    // MARK: 7. The small ones

    @Test func invalidUTF8ArgumentsAreRefused() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // sh puts the raw byte 0xFF into the argument; Foundation's Process cannot.
        let result = try CLI.run(
            ["-c", #"exec "$0" --data-dir "$1" devices register --namespace ns --platform wear --device-id "d$(printf '\377')" --token t"#,
             CLI.executable.path, dir], timeout: Self.bound, closedInput: true, executable: URL(fileURLWithPath: "/bin/sh"))
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("not valid UTF-8"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/native-push.sqlite3"))
    }

    @Test func aPayloadFileOverOneMebibyteIsRefused() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let big = "{\"x\":\"" + String(repeating: "a", count: 2 << 20) + "\"}"
        try write(big, to: dir + "/payload.json")
        let result = try CLI.run(["envelope", "seal", "--key", key, "--payload-file", dir + "/payload.json"], timeout: Self.bound)
        #expect(result.status == 2)
        #expect(result.stderr.contains("larger than 1 MiB"), "\(result.stderr)")
    }

    @Test func aSettingsFileOverOneMebibyteIsAClearError() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try write("{\"x\":\"" + String(repeating: "a", count: 2 << 20) + "\"}", to: dir + "/settings.json")
        let result = try CLI.run(["--data-dir", dir, "config"], environment: ["HOME": dir], timeout: Self.bound)
        #expect(result.status == 1)
        #expect(result.stderr.contains("larger than 1 MiB") && result.stderr.contains("left untouched"), "\(result.stderr)")
    }

    @Test func aRelayURLPasswordIsRedactedAndNeverSaved() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let environment = ["HOME": dir, "HAPI_HOME": dir, "HAPI_PUSH_RELAY_URL": "https://hub:s3cret-pw@relay.example.test"]
        for arguments in [["config"], ["config", "--json"]] {
            let result = try CLI.run(arguments, environment: environment, timeout: Self.bound)
            #expect(result.status == 0)
            #expect(!(result.stdout + result.stderr).contains("s3cret-pw"), "\(result.stdout)")
            #expect(result.stdout.contains("hub:***@relay.example.test"))
        }
        let saved = FileManager.default.contents(atPath: dir + "/settings.json").map { String(decoding: $0, as: UTF8.self) } ?? ""
        #expect(!saved.contains("s3cret-pw"))
        #expect(!saved.contains("iosPushRelayUrl"))
    }
}
