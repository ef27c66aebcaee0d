import Foundation
import Testing

@Suite struct DevicesCLITests {
    let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
    let iosToken = String(repeating: "0f", count: 32)

    func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("hapi-cli-\(UUID().uuidString)").path
    }

    @Test func registerListUnregisterRoundTrip() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let registered = try CLI.run([
            "--data-dir", dir, "devices", "register", "--namespace", "ns", "--platform", "ios", "--device-id", "iphone",
            "--token", iosToken.uppercased(), "--push-key", key,
        ])
        #expect(registered.status == 0, "\(registered.stderr)")
        #expect(!registered.stdout.contains(iosToken) && !registered.stdout.contains(iosToken.uppercased()))
        let phone = try CLI.run([
            "--data-dir", dir, "devices", "register", "--namespace", "ns", "--platform", "phone", "--device-id", "pixel", "--token", "fcm:tok",
        ])
        #expect(phone.status == 0)

        let list = try CLI.run(["--data-dir", dir, "devices", "list", "--namespace", "ns", "--json"])
        #expect(list.status == 0)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(array.count == 2)
        let ios = try #require(array.first { $0["platform"] as? String == "ios" })
        #expect(Set(ios.keys) == ["namespace", "deviceId", "platform", "tokenHash", "hasPushKey", "createdAt", "updatedAt"])
        #expect(ios["deviceId"] as? String == "iphone")
        #expect(ios["namespace"] as? String == "ns")
        #expect(ios["hasPushKey"] as? Bool == true)
        #expect((ios["tokenHash"] as? String)?.count == 12)
        #expect(ios["createdAt"] is Int)
        #expect(array.first { $0["platform"] as? String == "phone" }?["hasPushKey"] as? Bool == false)
        for output in [list.stdout, try CLI.run(["--data-dir", dir, "devices", "list", "--namespace", "ns"]).stdout] {
            #expect(!output.contains(key))
            #expect(!output.contains(iosToken))
            #expect(!output.contains("fcm:tok"))
        }

        let unregister = try CLI.run(["--data-dir", dir, "devices", "unregister", "--namespace", "ns", "--token", "fcm:tok"])
        #expect(unregister.status == 0)
        let after = try CLI.run(["--data-dir", dir, "devices", "list", "--namespace", "ns", "--json"])
        #expect((try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [Any])?.count == 1)
        let unknown = try CLI.run(["--data-dir", dir, "devices", "unregister", "--namespace", "ns", "--token", "nope"])
        #expect(unknown.status == 0)
    }

    @Test func dataDirectoryDefaultsToHapiHome() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var environment = ProcessInfo.processInfo.environment
        environment["HAPI_HOME"] = dir
        let result = try CLI.run(
            ["devices", "register", "--namespace", "ns", "--platform", "wear", "--device-id", "w", "--token", "t"], environment: environment)
        #expect(result.status == 0)
        #expect(FileManager.default.fileExists(atPath: dir + "/native-push.sqlite3"))
    }

    @Test func validationFailuresExitTwoNamingEveryField() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try CLI.run([
            "--data-dir", dir, "devices", "register", "--namespace", "ns", "--platform", "ios", "--device-id", String(repeating: "x", count: 129),
            "--token", "xyz",
        ])
        #expect(result.status == 2)
        #expect(result.stderr.contains("deviceId"))
        #expect(result.stderr.contains("token"))
        #expect(result.stderr.contains("pushKey"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/native-push.sqlite3"))
        let badPlatform = try CLI.run([
            "--data-dir", dir, "devices", "register", "--namespace", "ns", "--platform", "android", "--device-id", "d", "--token", "t",
        ])
        #expect(badPlatform.status == 2)
        #expect(badPlatform.stderr.contains("platform"))
    }

    @Test func unusableDataDirectoryExitsOne() throws {
        let result = try CLI.run(["--data-dir", "/sys/hapi-cli-test", "devices", "list", "--namespace", "ns"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("/sys/hapi-cli-test"))
    }

    @Test func missingOptionsAreUsageErrors() throws {
        #expect(try CLI.run(["devices", "list"]).status == 2)
        #expect(try CLI.run(["devices", "frob"]).status == 2)
        #expect(try CLI.run(["--data-dir"]).status == 2)
        #expect(try CLI.run(["devices", "list", "--help"]).status == 0)
    }
}
