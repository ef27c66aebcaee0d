import Foundation
import PushEnvelope
import PushTestSupport
import PushTransports
import Testing

@testable import PushRelay

/// The relay reads endpoints, service accounts, keys and a CA file as the hub does (issue 15):
/// the same rules, refused at start-up with a message naming the variable.
@Suite struct RelayHostileConfigurationTests {
    func refusal(_ environment: [String: String]) -> String? {
        do {
            _ = try PushRelayConfiguration(environment: environment)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func endpointOverridesFollowTheHubsRules() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let base = ["RELAY_FCM_SERVICE_ACCOUNT_PATH": providers.serviceAccountPath]
        for variable in ["RELAY_FCM_ENDPOINT", "RELAY_APNS_ENDPOINT"] {
            for (url, why) in [
                ("http://fcm.example.test", "must use https://"), ("http://10.1.2.3:80", "must use https://"),
                ("https://u:secret@fcm.example.test", "user name or password"), ("https://fcm.example.test:99999", "port"),
                ("https://fcm.example.test#", "fragment"),
            ] {
                let message = refusal(base.merging([variable: url]) { $1 }) ?? "(accepted)"
                #expect(message.hasPrefix(variable) && message.contains(why), "\(variable)=\(url): \(message)")
                #expect(!message.contains("secret"))
            }
            #expect(refusal(base.merging([variable: "http://127.0.0.1:9"]) { $1 }) == nil)
        }
    }

    @Test func aServiceAccountWithACleartextTokenURIIsRefused() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("relay-sa-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let keys = try #require(TestKeys.rsa2048())
        let json = JSONValue.object([
            "type": "service_account", "project_id": "p", "client_email": "a@p.iam.gserviceaccount.com", "private_key": .string(keys.privateKeyPEM),
            "token_uri": "http://oauth2.googleapis.com/token",
        ])
        try Data(json.canonicalBytes).write(to: URL(fileURLWithPath: dir + "/sa.json"))
        let message = refusal(["RELAY_FCM_SERVICE_ACCOUNT_PATH": dir + "/sa.json"]) ?? "(accepted)"
        #expect(message.contains("token_uri") && message.contains("must use https://"), "\(message)")
    }

    @Test func anEncryptedKeyIsRefusedWithoutAPrompt() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("relay-key-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(try #require(TestKeys.encryptedPEM()).utf8).write(to: URL(fileURLWithPath: dir + "/key.p8"))
        let environment = [
            "RELAY_APNS_KEY_P8_PATH": dir + "/key.p8", "RELAY_APNS_KEY_ID": "K", "RELAY_APNS_TEAM_ID": "T", "RELAY_APNS_BUNDLE_ID": "b.id",
        ]
        let message = try RelayBounded.run(seconds: 30) { refusal(environment) } ?? "(accepted)"
        #expect(message.contains("encrypted keys are not supported: export it without a passphrase"), "\(message)")
    }

    @Test func aCAFileTheClientWouldRefuseStopsTheRelayWithTheReason() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let empty = providers.directory + "/empty.pem"
        try Data().write(to: URL(fileURLWithPath: empty))
        for (path, why) in [(empty, "is empty"), (providers.directory, "is a directory"), ("/dev/zero", "not a regular file")] {
            let message = refusal(["RELAY_FCM_SERVICE_ACCOUNT_PATH": providers.serviceAccountPath, "RELAY_CA_FILE": path]) ?? "(accepted)"
            #expect(message.hasPrefix("RELAY_CA_FILE") && message.contains(why), "\(path): \(message)")
        }
    }
}

/// Runs `body` on a thread of its own and waits at most `seconds` (a pass-phrase prompt would
/// block it): a hang fails the test instead of the suite.
enum RelayBounded {
    struct TimedOut: Error {}

    static func run<T: Sendable>(seconds: Int, _ body: @escaping @Sendable () -> T) throws -> T {
        let box = RelayBoundedBox<T>()
        let done = DispatchSemaphore(value: 0)
        Thread {
            box.set(body())
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + .seconds(seconds)) == .success, let value = box.get() else { throw TimedOut() }
        return value
    }
}

final class RelayBoundedBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T?
    func set(_ newValue: T) { lock.withLock { value = newValue } }
    func get() -> T? { lock.withLock { value } }
}
