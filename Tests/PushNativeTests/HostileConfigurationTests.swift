import Foundation
import PushLoopbackServer
import PushTestSupport
import Testing

import PushTransports
import DeviceRegistry
import PushEnvelope
@testable import PushNative

/// Configuration as a careless or hostile operator writes it (issue 15): refused with a
/// diagnostic that says why, never used silently, never a reason to stop the hub.
@Suite struct HostileConfigurationTests {
    func message(_ configuration: PushConfiguration, _ setting: String) -> String {
        configuration.diagnostics.filter { $0.setting == setting }.map(\.message).joined(separator: " | ")
    }

    // MARK: 4. URLs validated

    @Test(arguments: [
        ("https://127.0.0.1:8443#", "fragment"), ("https://127.0.0.1:8443?x=", "query"), ("https://relay.example.test/?x=1", "query"),
        ("https://user@relay.example.test", "user name or password"), ("https://relay.example.test:99999", "port"),
        ("https://relay.example.test:0", "port"), ("https://relay.example.test:-1", "port"), ("ftp://relay.example.test", "https://"),
        ("https://", "host"), ("https://relay example.test", "space"),
    ])
    func aRelayURLWithAQueryFragmentUserInfoOrBadPortIsRefused(_ url: String, _ why: String) throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_PUSH_RELAY_URL"] = url
        let configuration = try fixture.load(persist: false)
        #expect(configuration.ios.transport.name == "off")
        #expect(configuration.android.transport.name == "off")
        #expect(message(configuration, "iosPushRelayUrl").contains(why), "\(url): \(message(configuration, "iosPushRelayUrl"))")
    }

    /// `https://relay#` posted to `/`, where a 200 counted as sent and suppressed Web Push: a
    /// lost notification. Now nothing is sent and Web Push fires.
    @Test func aRelayURLWithAFragmentLosesNoNotification() async throws {
        let relay = try RecordingServer { _ in .json(#"{"ok":true}"#) }
        defer { relay.stop() }
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_PUSH_RELAY_URL"] = relay.baseURL + "#"
        fixture.environment["HAPI_PUSH_CA_FILE"] = relay.caFile
        let configuration = try fixture.load(persist: false)
        let store = InMemoryPushDeviceStore()
        let push = try NativePush(configuration: configuration, store: store)
        _ = await push.register(
            namespace: "ns",
            body: Array(#"{"token":"\#(String(repeating: "ab", count: 32))","platform":"ios","deviceId":"d","pushKey":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}"#.utf8))
        let report = try await push.dispatch(
            PushNotificationPayload(type: .ready, sessionId: "s", url: "/sessions/s", title: "t", body: "b"), namespace: "ns")
        await push.shutdown()
        #expect(!report.suppressWebPush)
        #expect(relay.requests.isEmpty)
    }

    @Test func aBaseURLWithAPathAndPortStaysUsable() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_PUSH_RELAY_URL"] = "https://relay.example.test:8443/hapi//"
        let configuration = try fixture.load(persist: false)
        #expect(configuration.relayURL == "https://relay.example.test:8443/hapi")
        #expect(configuration.ios.transport.name == "relay")
    }

    // MARK: 5. Credentials over cleartext

    @Test(arguments: ["HAPI_PUSH_RELAY_URL", "HAPI_APNS_ENDPOINT", "HAPI_FCM_ENDPOINT"])
    func cleartextToAnotherHostIsRefusedAndLoopbackAllowed(_ variable: String) throws {
        let fixture = try ConfigFixture()
        _ = try fixture.useAPNs()
        let setting = try #require(PushSetting.all.first { $0.environmentVariable == variable })
        for (url, refused) in [
            ("http://push.example.test", true), ("http://10.0.0.7:8790", true), ("http://127.0.0.1:8790", false), ("http://localhost:8790", false),
            ("http://[::1]:8790", false),
        ] {
            fixture.environment[variable] = url
            let configuration = try fixture.load(persist: false)
            let text = message(configuration, setting.settingsKey)
            #expect(text.contains("must use https://") == refused, "\(variable)=\(url): \(text)")
        }
    }

    @Test func aServiceAccountWithACleartextTokenURIIsRefused() throws {
        let fixture = try ConfigFixture()
        let keys = try #require(TestKeys.rsa2048())
        for uri in ["http://oauth2.googleapis.com/token", "http://127.0.0.1:8080/token"] {
            let json = JSONValue.object([
                "type": "service_account", "project_id": "p", "client_email": "a@p.iam.gserviceaccount.com", "private_key": .string(keys.privateKeyPEM),
                "token_uri": .string(uri),
            ])
            #expect(throws: PushCredentialError.insecure) { try FCMServiceAccount(json: json.canonicalBytes) }
            let path = try fixture.write("sa.json", json.canonicalString)
            fixture.environment["FCM_SERVICE_ACCOUNT_PATH"] = path
            let configuration = try fixture.load(persist: false)
            #expect(configuration.android.transport.name == "off")
            #expect(message(configuration, "fcmServiceAccountPath").contains("must use https://"))
        }
    }

    // MARK: 1. Encrypted keys (in process, bounded: a prompt would block this thread)

    @Test func encryptedKeysAreRefusedWithoutPrompting() throws {
        let pem = try #require(TestKeys.encryptedPEM())
        let refused = try Bounded.run(seconds: 30) { () -> PushCredentialError? in
            do throws(PushCredentialError) {
                _ = try APNsCredentials(pem: Array(pem.utf8), keyId: "K", teamId: "T", bundleId: "b")
                return nil
            } catch {
                return error
            }
        }
        #expect(refused == .encrypted)
        #expect(refused?.message.contains("encrypted keys are not supported: export it without a passphrase") == true)
    }

    // MARK: 3. A failed first-sight save

    /// A data directory path that runs through a regular file: every write fails (as root too).
    @Test func aFirstSightSaveThatFailsWarnsAndTheValuesApply() throws {
        let fixture = try ConfigFixture()
        let blocker = try fixture.write("not-a-directory", "x")
        fixture.environment["HAPI_IOS_PUSH"] = "off"
        fixture.environment["HAPI_ANDROID_PUSH"] = "relay"
        let configuration = try PushConfiguration.load(environment: fixture.environment, dataDirectory: blocker + "/data", persist: true)
        #expect(configuration.ios.transport.name == "off")
        #expect(configuration.android.transport.name == "relay")
        #expect(configuration.persistedKeys.isEmpty)
        let warning = try #require(configuration.diagnostics.first { $0.setting == "settings.json" })
        #expect(warning.level == .warning)
        #expect(warning.message.contains("androidPushMode, iosPushMode apply to this run but were not saved"), "\(warning.message)")
    }

    // MARK: 7. The small ones

    @Test func aWorldWritableSettingsFileDrawsAWarning() throws {
        let fixture = try ConfigFixture(settings: #"{"iosPushMode":"off"}"#)
        chmod(fixture.settingsPath, 0o666)
        let configuration = try fixture.load(persist: false)
        let warning = try #require(configuration.diagnostics.first { $0.setting == "settings.json" })
        #expect(warning.level == .warning)
        #expect(warning.message.contains("world-writable"))
        chmod(fixture.settingsPath, 0o600)
        #expect(try fixture.load(persist: false).diagnostics.allSatisfy { $0.setting != "settings.json" })
    }

    /// The choice: a symlinked settings.json is written through (the target is updated, the
    /// link stays a link), as dotfile managers expect.
    @Test func aSymlinkedSettingsFileIsWrittenThrough() throws {
        let fixture = try ConfigFixture()
        let elsewhere = try ConfigFixture(settings: #"{"theme":"dark"}"#)
        try FileManager.default.createSymbolicLink(atPath: fixture.settingsPath, withDestinationPath: elsewhere.settingsPath)
        fixture.environment["HAPI_IOS_PUSH"] = "off"
        let configuration = try fixture.load()
        #expect(configuration.persistedKeys == ["iosPushMode"])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: fixture.settingsPath) == elsewhere.settingsPath)
        let target = try elsewhere.settingsObject()
        #expect(target["iosPushMode"] == "off")
        #expect(target["theme"] == "dark")
    }

    @Test func aSettingsFileOverOneMebibyteIsRefusedAndLeftUntouched() throws {
        let big = "{\"x\":\"" + String(repeating: "a", count: 2 << 20) + "\"}"
        let fixture = try ConfigFixture(settings: big)
        fixture.environment["HAPI_IOS_PUSH"] = "off"
        #expect(throws: PushSettingsFileError.tooLarge) { try fixture.load() }
        #expect(fixture.settingsText() == big)
    }

    @Test func aRelayURLWithAPasswordIsShownRedactedAndNotSaved() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_PUSH_RELAY_URL"] = "https://hub:s3cret@relay.example.test"
        let configuration = try fixture.load()
        #expect(configuration.shownValue(.relayURL) == "https://hub:***@relay.example.test")
        let everything = configuration.description + configuration.jsonValue.canonicalString
        #expect(!everything.contains("s3cret"))
        #expect(fixture.settingsText().map { !$0.contains("s3cret") } ?? true)
    }
}

/// Runs `body` on a thread of its own and waits at most `seconds`: a call that blocks (a
/// pass-phrase prompt) fails the test instead of hanging the suite. The thread is abandoned then.
enum Bounded {
    struct TimedOut: Error, CustomStringConvertible {
        let seconds: Int
        var description: String { "still running after \(seconds) s" }
    }

    static func run<T: Sendable>(seconds: Int, _ body: @escaping @Sendable () -> T) throws -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            box.set(body())
            done.signal()
        }
        thread.start()
        guard done.wait(timeout: .now() + .seconds(seconds)) == .success, let value = box.get() else { throw TimedOut(seconds: seconds) }
        return value
    }

    final class ResultBox<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: T?
        func set(_ newValue: T) { lock.withLock { value = newValue } }
        func get() -> T? { lock.withLock { value } }
    }
}
