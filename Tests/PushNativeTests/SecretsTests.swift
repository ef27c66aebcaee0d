import Foundation
import PushLoopbackServer
import PushSync
import PushTestSupport
import Testing

import PushHTTP
import PushTransports
import DeviceRegistry
import PushEnvelope
@testable import PushNative

// No secret ever reaches a log line, a report, the CLI's output or a description: device tokens,
// push keys, envelopes, JWTs (provider tokens and OAuth assertions), the OAuth access token and
// private keys. Everything is captured across full dispatches over every transport and every
// failure, and scanned.

/// How a stand-in answers one device, chosen by its token.
enum SecretScenario: String, Sendable, CaseIterable {
    case ok, gone, serverError, timeout, expiredProviderToken
}

/// Which scenario each token gets.
final class ScenarioTable: Sendable {
    let map = Locked<[String: SecretScenario]>([:])
    func scenario(_ token: String?) -> SecretScenario {
        guard let token else { return .ok }
        return map.withLock { $0[token] } ?? .ok
    }
}

/// The loopback providers, answering each device by its token, and every secret of the world.
final class SecretWorld: @unchecked Sendable {
    let providers: LoopbackProviders
    let directory: String
    /// A service account whose token URI answers `invalid_grant` (the OAuth-failure case).
    let refusedAccountPath: String
    private let table = ScenarioTable()
    private let knownSecrets = Locked<[String]>([LoopbackProviders.accessToken, SecretWorld.proxyPassword])
    /// A proxy password every hub here is configured with (the stand-ins are in NO_PROXY, so
    /// requests go direct while every output shows the proxy).
    static let proxyPassword = "Proxy-Passw0rd_secret"

    struct Device: Sendable {
        var platform: String
        var deviceId: String
        var token: String
        var key: PushKey?
        var scenario: SecretScenario
    }

    init() throws {
        providers = try LoopbackProviders()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-secrets-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        refusedAccountPath = directory + "/refused-service-account.json"
        let account = JSONValue.object([
            "type": "service_account", "project_id": "hapi-demo", "client_email": "push@hapi-demo.iam.gserviceaccount.com",
            "private_key": .string(providers.serviceAccountKeys.privateKeyPEM), "token_uri": .string(providers.fcm.baseURL + "/token-refused"),
        ])
        try Data(account.canonicalBytes).write(to: URL(fileURLWithPath: refusedAccountPath))
        for pem in [providers.apnsKeys.privateKeyPEM, providers.serviceAccountKeys.privateKeyPEM] {
            // Every line of the PEM body (64 base64 characters, the last one shorter).
            let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") && $0.count >= 16 }.map(String.init)
            knownSecrets.withLock { $0 += body }
        }

        let table = self.table
        providers.relay.respond { request in
            switch table.scenario(try? JSONParser.parse(request.body)["token"]?.stringValue) {
            case .ok, .expiredProviderToken: return .json(#"{"ok":true}"#)
            case .gone: return .text(status: 410, #"{"ok":false,"code":"unregistered"}"#)
            case .serverError: return .text(status: 502, #"{"ok":false,"code":"upstream","message":"Firebase project mismatch"}"#)
            case .timeout: return .action(.neverRespond)
            }
        }
        providers.apns.respond { request in
            let token = request.path.hasPrefix("/3/device/") ? String(request.path.dropFirst("/3/device/".count)) : nil
            switch table.scenario(token) {
            case .ok: return .json("").adding(header: "apns-id", UUID().uuidString)
            case .gone: return .text(status: 410, #"{"reason":"Unregistered"}"#)
            case .serverError: return .text(status: 500, #"{"reason":"InternalServerError"}"#)
            case .expiredProviderToken: return .text(status: 403, #"{"reason":"ExpiredProviderToken"}"#)
            case .timeout: return .action(.neverRespond)
            }
        }
        providers.fcm.respond(
            LoopbackProviders.googleResponder { request in
                if request.path == "/token-refused" {
                    return .text(status: 400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
                }
                switch table.scenario(try? JSONParser.parse(request.body)["message"]?["token"]?.stringValue) {
                case .ok, .expiredProviderToken: return .json(#"{"name":"projects/hapi-demo/messages/0:1"}"#)
                case .gone:
                    return .text(
                        status: 404,
                        #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#)
                case .serverError:
                    return .text(status: 503, #"{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}"#)
                case .timeout: return .action(.neverRespond)
                }
            })
    }

    /// A device with a fresh random token (and key where the platform has one), answered per
    /// `scenario`. Its token and key become known secrets.
    func device(_ platform: String, _ deviceId: String, _ scenario: SecretScenario, key hasKey: Bool = true) throws -> Device {
        let token =
            platform == "ios"
            ? (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            : "fcm" + (0..<40).map { _ in String("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_-".randomElement() ?? "x") }.joined()
        let key = platform != "wear" && hasKey ? try PushKey.generate() : nil
        table.map.withLock { $0[token] = scenario }
        knownSecrets.withLock { secrets in
            secrets.append(token)
            if let key { secrets.append(key.base64) }
        }
        return Device(platform: platform, deviceId: deviceId, token: token, key: key, scenario: scenario)
    }

    /// The devices of one namespace for a configuration: every scenario that configuration can meet.
    func devices(ios: String, android: String, scenarios wanted: [SecretScenario]) throws -> [Device] {
        var devices: [Device] = []
        for scenario in wanted {
            if ios != "off" { devices.append(try device("ios", "iphone-\(scenario.rawValue)", scenario)) }
            if android != "off" {
                devices.append(try device("phone", "pixel-\(scenario.rawValue)", scenario))
                if android == "fcm" { devices.append(try device("wear", "watch-\(scenario.rawValue)", scenario)) }
            }
        }
        if android == "relay" { devices.append(try device("phone", "pixel-keyless", .ok, key: false)) }
        return devices
    }

    /// Every secret, including every envelope and JWT the stand-ins received so far.
    var secrets: [String] {
        var all = knownSecrets.withLock { $0 }
        for request in providers.relay.requests {
            if let envelope = try? JSONParser.parse(request.body)["envelope"]?.stringValue { all.append(envelope) }
        }
        for request in providers.apns.requests {
            if let envelope = try? JSONParser.parse(request.body)["hapi"]?["e"]?.stringValue { all.append(envelope) }
            if let authorization = request.header("authorization") { all.append(authorization) }
        }
        for request in providers.fcm.requests {
            if let authorization = request.header("authorization") { all.append(authorization) }
            if request.path.hasPrefix("/token") { all.append(request.bodyString) }
        }
        return all
    }

    /// The secrets found in `text`, named but never quoted whole.
    func leaks(in text: String) -> [String] {
        var found = secrets.filter { text.contains($0) }.map { "secret \($0.prefix(6))…(\($0.count) chars)" }
        // A JWT, a PEM header followed by its body (raw or JSON-escaped; the header alone appears
        // in the "expected -----BEGIN PRIVATE KEY-----" diagnostic), a Google access token.
        for marker in ["eyJ", "PRIVATE KEY-----\n", "PRIVATE KEY-----\\n", "ya29."] where text.contains(marker) {
            found.append("marker \(marker)")
        }
        return found
    }

    func environment(ios: String, android: String, dataDirectory: String, refusedOAuth: Bool = false) -> [String: String] {
        var environment = providers.environment(iosMode: ios, androidMode: android, dataDirectory: dataDirectory)
        if refusedOAuth { environment["FCM_SERVICE_ACCOUNT_PATH"] = refusedAccountPath }
        environment["HTTPS_PROXY"] = "http://hub:\(Self.proxyPassword)@proxy.invalid:3128"
        environment["HAPI_PUSH_HTTPS_PROXY"] = "http://hub:\(Self.proxyPassword)@proxy.invalid:3128"
        environment["NO_PROXY"] = "127.0.0.1,localhost"
        return environment
    }

    func stop() {
        providers.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Every record the library logs, as text.
final class TextCapturingLogger: PushLogger {
    private let lines = Locked<[String]>([])
    func log(_ record: PushLogRecord) {
        var dumped = ""
        dump(record, to: &dumped)
        lines.withLock { $0 += [record.description, String(reflecting: record), dumped] }
    }
    var text: String { lines.withLock { $0.joined(separator: "\n") } }
    var count: Int { lines.withLock { $0.count / 3 } }
}

@Suite struct SecretsTests {
    /// Library level: a hub per configuration (relay; direct APNs + FCM; refused OAuth), every
    /// scenario, 1 s timeouts. Logs, reports, configurations and errors are scanned; only an
    /// explicit token death prunes, and every other registration stays.
    @Test func libraryLogsReportsAndConfigurationsCarryNoSecret() async throws {
        let world = try SecretWorld()
        // The scanner itself finds what it must: a token, a PEM, a service-account file.
        let probe = try world.device("ios", "probe", .ok)
        #expect(!world.leaks(in: "token=\(probe.token)").isEmpty)
        let probeKey = try #require(probe.key).base64
        #expect(!world.leaks(in: "key=" + probeKey).isEmpty)
        #expect(!world.leaks(in: world.providers.apnsKeys.privateKeyPEM).isEmpty)
        let accountFile = try String(contentsOfFile: world.providers.serviceAccountPath, encoding: .utf8)
        #expect(!world.leaks(in: accountFile).isEmpty)
        #expect(world.leaks(in: "expected -----BEGIN PRIVATE KEY----- in the file").isEmpty)
        let logger = TextCapturingLogger()
        var captured: [String] = []
        let configurations: [(ios: String, android: String, refused: Bool, scenarios: [SecretScenario])] = [
            ("relay", "relay", false, [.ok, .gone, .serverError, .timeout]),
            ("apns", "fcm", false, SecretScenario.allCases),
            ("relay", "fcm", true, [.ok, .gone]),  // OAuth refused: the FCM batch fails once
        ]
        for configuration in configurations {
            let dataDirectory = world.directory + "/lib-\(configuration.ios)-\(configuration.android)-\(configuration.refused)"
            let environment = world.environment(
                ios: configuration.ios, android: configuration.android, dataDirectory: dataDirectory, refusedOAuth: configuration.refused)
            let pushConfiguration = try PushConfiguration.load(environment: environment, dataDirectory: dataDirectory)
            captured += [pushConfiguration.description, String(reflecting: pushConfiguration), pushConfiguration.jsonValue.canonicalString]
            captured += pushConfiguration.diagnostics.map(\.description)
            let push = try NativePush(
                configuration: pushConfiguration, store: try SQLitePushDeviceStore(directory: dataDirectory),
                runtime: NativePush.Configuration(timeouts: .init(request: .seconds(1))), logger: logger)
            let devices = try world.devices(ios: configuration.ios, android: configuration.android, scenarios: configuration.scenarios)
            for device in devices {
                var fields: [String: JSONValue] = [
                    "platform": .string(device.platform), "deviceId": .string(device.deviceId), "token": .string(device.token),
                ]
                if let key = device.key { fields["pushKey"] = .string(key.base64) }
                let answer = await push.register(namespace: "ns", body: JSONValue.object(fields).canonicalBytes)
                #expect(answer.status == 200, "\(device.deviceId)")
                captured.append(String(reflecting: answer))
            }
            let report = try await push.dispatch(readyPayloadForSecrets, namespace: "ns")
            captured += [report.description, String(reflecting: report), report.jsonValue.canonicalString]
            captured += report.deliveries.map { String(reflecting: $0) }
            let remaining = try await push.registry.store.devices(namespace: "ns", platforms: nil)
            captured += remaining.map { String(reflecting: $0) }
            await push.shutdown()

            for delivery in report.deliveries {
                let device = try #require(devices.first { $0.deviceId == delivery.deviceId })
                let expectedPrune = device.scenario == .gone && !(configuration.refused && delivery.transport == .fcm)
                #expect(delivery.pruned == expectedPrune, "\(delivery)")
                #expect(delivery.outcome != .invalid || device.scenario == .gone, "\(delivery)")
                if configuration.refused && delivery.transport == .fcm {
                    #expect(delivery.outcome == .failed && delivery.reasonText?.hasPrefix("oauth: ") == true, "\(delivery)")
                }
                if device.scenario == .timeout { #expect(delivery.reasonText == "timeout", "\(delivery)") }
                if device.scenario == .expiredProviderToken && delivery.transport == .apns {
                    #expect(delivery.reasonText == "ExpiredProviderToken", "\(delivery)")
                }
            }
            // Only what was pruned is gone.
            let pruned = Set(report.deliveries.filter(\.pruned).map(\.deviceId))
            #expect(Set(remaining.map(\.deviceId)) == Set(devices.map(\.deviceId)).subtracting(pruned))
        }
        captured.append(logger.text)
        #expect(logger.count > 0)
        let text = captured.joined(separator: "\n")
        let leaks = world.leaks(in: text)
        print("secrets (library): \(world.secrets.count) secrets looked for in \(logger.count) log records and \(text.count) characters")
        world.stop()
        #expect(leaks.isEmpty, "\(leaks)")
    }

    /// The CLI: `config`, `config --json`, `devices register/list [--json]`, `send`, `send --json`
    /// over the relay, direct APNs + FCM and a refused OAuth exchange, with every failure;
    /// stdout and stderr are scanned. The two timeout sends (the CLI's 10 s request timeout) run
    /// in the background meanwhile.
    @Test func cliOutputCarriesNoSecret() async throws {
        let world = try SecretWorld()
        var captured: [String] = []
        let cli = SecretCLI()
        try #require(FileManager.default.isExecutableFile(atPath: cli.executable.path), "build hapi-push first")

        let setups: [(name: String, ios: String, android: String, refused: Bool, scenarios: [SecretScenario])] = [
            ("relay", "relay", "relay", false, [.ok, .gone, .serverError]),
            ("direct", "apns", "fcm", false, [.ok, .gone, .serverError, .expiredProviderToken]),
            ("oauth", "off", "fcm", true, [.ok]),
        ]
        var background: [Process] = []
        var backgroundPipes: [Pipe] = []
        var foreground: [(name: String, dataDirectory: String, environment: [String: String], devices: [SecretWorld.Device])] = []
        for setup in setups {
            let dataDirectory = world.directory + "/cli-\(setup.name)"
            let environment = world.environment(ios: setup.ios, android: setup.android, dataDirectory: dataDirectory, refusedOAuth: setup.refused)
            let devices = try world.devices(ios: setup.ios, android: setup.android, scenarios: setup.scenarios)
            for device in devices {
                captured.append(try cli.run(["--data-dir", dataDirectory] + SecretCLI.register(device, namespace: "ns"), environment).all)
            }
            if !setup.refused {
                // Devices that never get an answer, sent in the background.
                let slow = try world.devices(ios: setup.ios, android: setup.android == "relay" ? "relay" : "fcm", scenarios: [.timeout])
                    .filter { $0.scenario == .timeout }
                for device in slow {
                    captured.append(try cli.run(["--data-dir", dataDirectory] + SecretCLI.register(device, namespace: "slow"), environment).all)
                }
                let pipe = Pipe()
                background.append(try cli.start(["--data-dir", dataDirectory] + SecretCLI.send(namespace: "slow"), environment, output: pipe))
                backgroundPipes.append(pipe)
            }
            foreground.append((setup.name, dataDirectory, environment, devices))
        }
        for (name, dataDirectory, environment, devices) in foreground {
            let data = ["--data-dir", dataDirectory]
            for arguments in [["config", "--json"], ["config"], ["devices", "list", "--namespace", "ns"], ["devices", "list", "--namespace", "ns", "--json"]] {
                let result = try cli.run(data + arguments, environment)
                #expect(result.status == 0, "\(name) \(arguments): \(result.stderr)")
                captured.append(result.all)
            }
            let json = try cli.run(data + SecretCLI.send(namespace: "ns") + ["--json"], environment)
            #expect(json.status == 0, "\(name) send --json: \(json.stderr)")
            captured.append(json.all)
            let report = try JSONParser.parse(Array(json.stdout.utf8))
            for delivery in report["deliveries"]?.arrayValue ?? [] {
                let deviceId = delivery["deviceId"]?.stringValue ?? ""
                let device = try #require(devices.first { $0.deviceId == deviceId })
                #expect(delivery["outcome"] != "invalid" || device.scenario == .gone, "\(name) \(deviceId)")
                if name == "oauth" { #expect(delivery["reason"]?.stringValue?.hasPrefix("oauth: ") == true) }
            }
            // Bring the pruned devices back, then the plain-text send.
            for device in devices where device.scenario == .gone {
                captured.append(try cli.run(data + SecretCLI.register(device, namespace: "ns"), environment).all)
            }
            let text = try cli.run(data + SecretCLI.send(namespace: "ns"), environment)
            #expect(text.status == 0, "\(name) send: \(text.stderr)")
            #expect(name != "direct" || text.stdout.contains("ExpiredProviderToken"))
            captured.append(text.all)
        }
        for (process, pipe) in zip(background, backgroundPipes) {
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let text = String(decoding: output, as: UTF8.self)
            #expect(process.terminationStatus == 0)
            #expect(text.contains("(timeout)"), "\(text)")
            captured.append(text)
        }
        let text = captured.joined(separator: "\n")
        let leaks = world.leaks(in: text)
        print("secrets (CLI): \(world.secrets.count) secrets looked for in \(captured.count) outputs, \(text.count) characters")
        if ProcessInfo.processInfo.environment["HAPI_SECRETS_DUMP"] != nil { print(text) }
        world.stop()
        #expect(leaks.isEmpty, "\(leaks)")
    }

    /// `description`, `String(reflecting:)` and `dump` of the public types that hold secrets.
    @Test func descriptionsOfSecretHoldingTypesAreRedacted() async throws {
        let world = try SecretWorld()
        let device = try world.device("ios", "iphone", .ok)
        let key = try #require(device.key)
        let registration = PushDeviceRegistration(
            namespace: "ns", deviceId: "iphone", platform: .ios, token: device.token, pushKey: key, createdAt: 1, updatedAt: 2)
        let credentials = try APNsCredentials(
            pem: Array(world.providers.apnsKeys.privateKeyPEM.utf8), keyId: "DEMO123456", teamId: "TEAM123456", bundleId: "run.hapi.app")
        let account = try FCMServiceAccount(contentsOfFile: world.providers.serviceAccountPath)
        let dataDirectory = world.directory + "/descriptions"
        let configuration = try PushConfiguration.load(
            environment: world.environment(ios: "apns", android: "fcm", dataDirectory: dataDirectory), dataDirectory: dataDirectory)
        let envelope = try PushEnvelopeCipher.seal(readyPayloadForSecrets.canonicalJSON, key: key)
        let jwt = "eyJhbGciOiJFUzI1NiIsImtpZCI6IkRFTU8xMjM0NTYifQ.eyJpc3MiOiJURUFNIn0.c2lnbmF0dXJl"
        let request = HTTPRequest(
            method: .post, url: "https://api.push.apple.com/3/device/\(device.token)?k=\(key.base64)",
            headers: ["authorization": "bearer " + jwt, "x-token": LoopbackProviders.accessToken],
            body: Array(#"{"token":"\#(device.token)","envelope":"\#(envelope)"}"#.utf8))
        let delivery = PushDelivery(target: .ios, token: device.token, content: .envelope(envelope), collapseId: "ready-s1")
        world.providers.clearRequests()
        let secrets = [device.token, key.base64, envelope, LoopbackProviders.accessToken, "eyJ", "PRIVATE KEY-----\n"]
            + world.secrets.filter { $0.count >= 16 }
        func leaks(_ value: Any, dumped: Bool = false) -> [String] {
            var text = "\(value)\n" + String(reflecting: value)
            if dumped { dump(value, to: &text) }
            return secrets.filter { text.contains($0) }.map { String($0.prefix(6)) + "…" }
        }
        let values: [(String, Any)] = [
            ("PushKey", key), ("PushDeviceRegistration", registration), ("APNsCredentials", credentials), ("FCMServiceAccount", account),
            ("PushConfiguration", configuration), ("HTTPRequest", request), ("HTTPHeaders", request.headers),
        ]
        for (name, value) in values {
            #expect(leaks(value).isEmpty, "\(name): description or debugDescription leaks \(leaks(value))")
        }
        // dump() / Mirror (debuggers, reflection-based loggers) of the same values.
        for (name, value) in values where name != "HTTPRequest" && name != "HTTPHeaders" {
            #expect(leaks(value, dumped: true).isEmpty, "\(name): dump leaks \(leaks(value, dumped: true))")
        }
        #expect(leaks(request, dumped: true).isEmpty, "HTTPRequest dump")
        #expect(leaks(request.headers, dumped: true).isEmpty, "HTTPHeaders dump")
        #expect(leaks(delivery).isEmpty, "PushDelivery: \(leaks(delivery))")
        world.stop()
    }
}

let readyPayloadForSecrets = PushNotificationPayload(
    type: .ready, sessionId: "s-secret", sessionName: "claude - hapi", url: "/sessions/s-secret", title: "Claude is ready",
    body: "Ready for input", severity: .info)

/// Runs the built `hapi-push` with a given environment.
struct SecretCLI {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
        var all: String { stdout + "\n" + stderr }
    }

    var executable: URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while directory.pathExtension == "xctest" || directory.lastPathComponent == "MacOS" { directory = directory.deletingLastPathComponent() }
        return directory.appendingPathComponent("hapi-push")
    }

    static func register(_ device: SecretWorld.Device, namespace: String) -> [String] {
        ["devices", "register", "--namespace", namespace, "--platform", device.platform, "--device-id", device.deviceId, "--token", device.token]
            + (device.key.map { ["--push-key", $0.base64] } ?? [])
    }

    static func send(namespace: String) -> [String] {
        ["send", "--namespace", namespace, "--type", "ready", "--session-id", "s-secret", "--title", "Claude is ready", "--body", "Ready for input"]
    }

    func start(_ arguments: [String], _ environment: [String: String], output: Pipe, errors: Pipe? = nil) throws -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { $1 }
        process.environment = merged
        process.standardOutput = output
        process.standardError = errors ?? output
        try process.run()
        return process
    }

    func run(_ arguments: [String], _ environment: [String: String]) throws -> Result {
        let out = Pipe()
        let err = Pipe()
        let process = try start(arguments, environment, output: out, errors: err)
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self))
    }
}
