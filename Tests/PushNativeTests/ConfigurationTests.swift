import Foundation
import PushTestSupport
import Testing

import PushTransports
import DeviceRegistry
import PushEnvelope
@testable import PushNative

/// A data directory with optional settings.json and credential files.
final class ConfigFixture: @unchecked Sendable {
    let directory: String
    var environment: [String: String]

    init(settings: String? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-config-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        environment = ["HOME": directory, "HAPI_HOME": directory]
        if let settings { try write("settings.json", settings) }
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    var settingsPath: String { directory + "/settings.json" }

    @discardableResult
    func write(_ name: String, _ contents: String) throws -> String {
        let path = directory + "/" + name
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func settingsText() -> String? {
        FileManager.default.contents(atPath: settingsPath).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The file's top-level object (members looked up exactly, `object["key"]`).
    func settingsObject() throws -> JSONValue {
        let text = try #require(settingsText())
        let value = try JSONParser.parse(text)
        try #require(value.objectValue != nil)
        return value
    }

    func load(persist: Bool = true) throws(PushSettingsFileError) -> PushConfiguration {
        try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: persist)
    }

    /// A valid APNs key file; returns the path and the PEM.
    func apnsKey(_ name: String = "AuthKey_TEST.p8") throws -> (path: String, pem: String) {
        let pair = try #require(TestKeys.p256())
        return (try write(name, pair.privateKeyPEM), pair.privateKeyPEM)
    }

    /// A valid service-account file; returns the path and its private key PEM.
    func serviceAccount(_ name: String = "service-account.json", project: String = "private-project") throws -> (path: String, pem: String) {
        let pair = try #require(TestKeys.rsa2048())
        let json = JSONValue.object([
            "type": "service_account", "project_id": .string(project), "client_email": "pusher@private-project.iam.gserviceaccount.com",
            "private_key": .string(pair.privateKeyPEM), "private_key_id": "abc123",
        ])
        return (try write(name, json.canonicalString), pair.privateKeyPEM)
    }

    func useAPNs() throws -> String {
        let key = try apnsKey()
        environment["HAPI_IOS_PUSH"] = "apns"
        environment["APNS_KEY_P8_PATH"] = key.path
        environment["APNS_KEY_ID"] = "KEY1234567"
        environment["APNS_TEAM_ID"] = "TEAM123456"
        environment["APNS_BUNDLE_ID"] = "run.hapi.test"
        return key.pem
    }
}

@Suite struct ConfigurationSourceTests {
    /// A value for each setting that is valid where it matters.
    static let sample: [String: String] = [
        "androidPushMode": "relay", "fcmServiceAccountPath": "/nonexistent/sa.json", "iosPushMode": "off",
        "iosPushRelayUrl": "https://relay.example.test", "apnsKeyP8Path": "/nonexistent/key.p8", "apnsKeyId": "KID",
        "apnsTeamId": "TEAM", "apnsBundleId": "b.id", "apnsEnv": "sandbox", "apnsEndpoint": "https://apns.example.test",
        "fcmEndpoint": "https://fcm.example.test", "pushCaFile": "/nonexistent/ca.pem",
        "pushDatabaseUrl": "postgresql://hub@db.example.test:5432/hapi",
        "httpsProxy": "http://proxy.example.test:3128", "noProxy": ".example.test,10.0.0.0/8",
        "webPushMode": "off", "webPushAllowPrivateEndpoints": "1", "webPushTopicUrgency": "off",
    ]

    @Test(arguments: PushSetting.all)
    func everySettingResolvesFromTheEnvironment(_ setting: PushSetting) throws {
        let fixture = try ConfigFixture()
        let value = try #require(Self.sample[setting.settingsKey])
        fixture.environment[setting.environmentVariable] = "  \(value)  "
        let configuration = try fixture.load(persist: false)
        #expect(configuration.settings[setting.settingsKey] == PushResolvedSetting(value: value, source: .environment))
    }

    @Test(arguments: PushSetting.all)
    func everySettingResolvesFromTheFile(_ setting: PushSetting) throws {
        let value = try #require(Self.sample[setting.settingsKey])
        let fixture = try ConfigFixture(settings: JSONValue.object([setting.settingsKey: .string(value)]).canonicalString)
        let configuration = try fixture.load()
        #expect(configuration.settings[setting.settingsKey] == PushResolvedSetting(value: value, source: .file))
    }

    @Test(arguments: PushSetting.all)
    func everySettingFallsBackToItsDefault(_ setting: PushSetting) throws {
        let fixture = try ConfigFixture()
        let configuration = try fixture.load()
        #expect(configuration.settings[setting.settingsKey] == PushResolvedSetting(value: setting.defaultValue, source: .default))
    }

    @Test(arguments: PushSetting.all)
    func environmentWinsOverTheFileWhichIsNotOverwritten(_ setting: PushSetting) throws {
        let fileValue = "file-value"
        let fixture = try ConfigFixture(settings: JSONValue.object([setting.settingsKey: .string(fileValue)]).canonicalString)
        let before = fixture.settingsText()
        fixture.environment[setting.environmentVariable] = "env-value"
        let configuration = try fixture.load()
        #expect(configuration.settings[setting.settingsKey]?.value == "env-value")
        #expect(configuration.settings[setting.settingsKey]?.source == .environment)
        #expect(fixture.settingsText() == before)
        #expect(configuration.persistedKeys.isEmpty)
    }

    @Test func firstSightPersistsEnvironmentValuesKeepingOtherKeys() throws {
        let fixture = try ConfigFixture(settings: #"{"theme":"dark","port":3006,"nested":{"a":[1,true,null]},"iosPushMode":"relay"}"#)
        fixture.environment["HAPI_ANDROID_PUSH"] = "off"
        fixture.environment["HAPI_PUSH_RELAY_URL"] = "https://relay.example.test/"
        fixture.environment["HAPI_IOS_PUSH"] = "off"
        let configuration = try fixture.load()
        #expect(configuration.persistedKeys == ["androidPushMode", "iosPushRelayUrl"])
        let object = try fixture.settingsObject()
        #expect(object["androidPushMode"] == "off")
        #expect(object["iosPushRelayUrl"] == "https://relay.example.test/")
        #expect(object["iosPushMode"] == "relay")
        #expect(object["theme"] == "dark")
        #expect(object["port"] == 3006)
        #expect(object["nested"] == ["a": [1, true, nil]])
        // Next run without the variable: the file supplies it.
        fixture.environment["HAPI_ANDROID_PUSH"] = nil
        let again = try fixture.load()
        #expect(again.settings["androidPushMode"] == PushResolvedSetting(value: "off", source: .file))
        #expect(again.persistedKeys.isEmpty)
    }

    @Test func settingsFileIsOwnerOnly() throws {
        let fixture = try ConfigFixture()
        let nested = fixture.directory + "/home"
        fixture.environment["HAPI_ANDROID_PUSH"] = "off"
        _ = try PushConfiguration.load(environment: fixture.environment, dataDirectory: nested)
        let fm = FileManager.default
        #expect(try fm.attributesOfItem(atPath: nested + "/settings.json")[.posixPermissions] as? Int == 0o600)
        #expect(try fm.attributesOfItem(atPath: nested)[.posixPermissions] as? Int == 0o700)
    }

    @Test func persistenceCanBeTurnedOff() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_ANDROID_PUSH"] = "off"
        let configuration = try fixture.load(persist: false)
        #expect(configuration.persistedKeys.isEmpty)
        #expect(fixture.settingsText() == nil)
    }

    @Test func emptyAndBlankValuesCountAsUnset() throws {
        let fixture = try ConfigFixture(settings: #"{"iosPushMode":"   "}"#)
        fixture.environment["HAPI_ANDROID_PUSH"] = "   "
        fixture.environment["APNS_ENV"] = ""
        let configuration = try fixture.load()
        #expect(configuration.settings["androidPushMode"] == PushResolvedSetting(value: "auto", source: .default))
        #expect(configuration.settings["iosPushMode"] == PushResolvedSetting(value: "relay", source: .default))
        #expect(configuration.settings["apnsEnv"]?.source == .default)
        #expect(configuration.persistedKeys.isEmpty)
    }

    @Test func nonStringFileValuesAreIgnoredWithADiagnostic() throws {
        let fixture = try ConfigFixture(settings: #"{"androidPushMode":42}"#)
        let configuration = try fixture.load()
        #expect(configuration.settings["androidPushMode"]?.source == .default)
        #expect(configuration.diagnostics.contains { $0.setting == "androidPushMode" && $0.level == .warning })
    }

    @Test(arguments: ["{not json", "[1,2]", "\"text\"", ""])
    func unparseableFileIsRefusedAndNeverOverwritten(_ contents: String) throws {
        let fixture = try ConfigFixture(settings: contents)
        fixture.environment["HAPI_ANDROID_PUSH"] = "off"
        #expect(throws: PushSettingsFileError.unparseable) { try fixture.load() }
        do {
            _ = try fixture.load()
        } catch {
            #expect(error.message.contains(fixture.settingsPath))
            #expect(error.message.contains("fix or remove"))
        }
        #expect(fixture.settingsText() == contents)
    }

    @Test func tildeExpandsToHOME() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HOME"] = "/home/operator"
        fixture.environment["FCM_SERVICE_ACCOUNT_PATH"] = "~/keys/sa.json"
        fixture.environment["HAPI_PUSH_CA_FILE"] = "~"
        fixture.environment["APNS_KEY_P8_PATH"] = "~other/key.p8"
        let configuration = try fixture.load(persist: false)
        #expect(configuration.settings["fcmServiceAccountPath"]?.value == "/home/operator/keys/sa.json")
        #expect(configuration.settings["pushCaFile"]?.value == "/home/operator")
        #expect(configuration.settings["apnsKeyP8Path"]?.value == "~other/key.p8")
        // The path persisted is the one the operator wrote.
        _ = try fixture.load(persist: true)
        #expect(try fixture.settingsObject()["fcmServiceAccountPath"] == "~/keys/sa.json")
    }

    @Test func dataDirectoryDefaultsToHapiHomeThenHomeDotHapi() {
        #expect(HubDataDirectory.resolve(environment: ["HAPI_HOME": " /srv/hapi ", "HOME": "/home/x"]) == "/srv/hapi")
        #expect(HubDataDirectory.resolve(environment: ["HAPI_HOME": "~/state", "HOME": "/home/x"]) == "/home/x/state")
        #expect(HubDataDirectory.resolve(environment: ["HAPI_HOME": "", "HOME": "/home/x"]) == "/home/x/.hapi")
        #expect(HubDataDirectory.resolve(environment: ["HOME": "/home/x/"]) == "/home/x/.hapi")
        #expect(HubDataDirectory.resolve(environment: [:]) == nil)
    }
}

@Suite struct SettingsFileConcurrencyTests {
    func writer(_ arguments: [String]) throws -> Process {
        let process = Process()
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while directory.pathExtension == "xctest" { directory = directory.deletingLastPathComponent() }
        process.executableURL = directory.appendingPathComponent("hapi-push-testsupport")
        process.arguments = ["settings-writer"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    @Test func aCrashBetweenTempWriteAndRenameLeavesTheOldFileWhole() throws {
        let fixture = try ConfigFixture(settings: #"{"theme":"dark"}"#)
        let before = fixture.settingsText()
        let process = try writer(["--dir", fixture.directory, "--key", "androidPushMode", "--value", "off", "--crash-before-rename"])
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(fixture.settingsText() == before)
        // The next writer cleans up the abandoned temporary file and succeeds.
        fixture.environment["HAPI_IOS_PUSH"] = "off"
        _ = try fixture.load()
        #expect(try fixture.settingsObject()["iosPushMode"] == "off")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: fixture.directory).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }

    @Test func twoProcessesPersistingAtOnceLoseNothing() throws {
        let fixture = try ConfigFixture(settings: #"{"keep":"me"}"#)
        let count = 40
        let processes = try ["a", "b"].map { try writer(["--dir", fixture.directory, "--key", "key-\($0)", "--value", $0, "--count", "\(count)"]) }
        for process in processes {
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        let object = try fixture.settingsObject()
        #expect(object.objectValue?.count == 2 * count + 1)
        #expect(object["keep"] == "me")
        #expect(object["key-a-\(count - 1)"] == "a")
        #expect(object["key-b-0"] == "b")
    }

    @Test func concurrentTasksInOneProcessLoseNothing() async throws {
        let fixture = try ConfigFixture()
        let file = SettingsFile(directory: fixture.directory)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<32 {
                group.addTask { _ = try file.addMissing(["k\(index)": "v"]) }
            }
            try await group.waitForAll()
        }
        #expect(try fixture.settingsObject().objectValue?.count == 32)
    }
}
