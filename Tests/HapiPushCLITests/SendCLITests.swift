import Foundation
import PushEnvelope
import PushLoopbackServer
import PushTestSupport
import Testing

@Suite struct SendCLITests {
    @Test func sendPrintsTheReportAndPrunesDeadTokens() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let dir = providers.directory + "/hub"
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in providers.environment(iosMode: "relay", androidMode: "fcm", dataDirectory: dir) { environment[name] = value }
        let key = Base64.encode([UInt8](repeating: 9, count: 32))
        let iosToken = String(repeating: "c3", count: 32)
        for arguments in [
            ["--platform", "ios", "--device-id", "iphone", "--token", iosToken, "--push-key", key],
            ["--platform", "wear", "--device-id", "watch", "--token", "wear-token"],
        ] {
            let result = try CLI.run(["devices", "register", "--namespace", "ns"] + arguments, environment: environment)
            #expect(result.status == 0, "\(result.stderr)")
        }
        providers.relay.respond { _ in .text(status: 410, #"{"ok":false,"code":"unregistered"}"#) }
        let sent = try CLI.run(
            [
                "send", "--namespace", "ns", "--type", "permission-request", "--session-id", "s9", "--session-name", "Claude - hapi",
                "--request-id", "req-1", "--title", "Claude needs permission", "--body", "Bash: ls", "--severity", "warning",
                "--notify-summary", "{\"a\": 1}", "--json",
            ], environment: environment)
        #expect(sent.status == 0, "\(sent.stderr)")
        let report = try JSONParser.parse(sent.stdout)
        #expect(report["suppressWebPush"] == true)
        let deliveries = try #require(report["deliveries"]?.arrayValue)
        #expect(deliveries.count == 2)
        for delivery in deliveries {
            for key in ["platform", "deviceId", "tokenHash", "transport", "outcome", "reason", "status", "pruned", "payload"] {
                #expect(delivery[key] != nil, "missing \(key)")
            }
        }
        let ios = try #require(deliveries.first { $0["platform"] == "ios" })
        #expect(ios["outcome"] == "invalid")
        #expect(ios["transport"] == "relay")
        #expect(ios["pruned"] == true)
        #expect(ios["status"] == 410)
        let watch = try #require(deliveries.first { $0["platform"] == "wear" })
        #expect(watch["outcome"] == "sent")
        #expect(watch["transport"] == "fcm")
        #expect(watch["payload"] == "full")
        // The FCM stand-in received the composed payload, url defaulted.
        let fcm = try #require(providers.fcm.requests.first { $0.path != "/token" })
        let data = try #require(try JSONParser.parse(fcm.body)["message"]?["data"])
        #expect(data["url"] == "/sessions/s9")
        #expect(data["requestId"] == "req-1")
        #expect(data["notifySummary"] == #"{"a":1}"#)
        #expect(!sent.stdout.contains(iosToken))

        let list = try CLI.run(["devices", "list", "--namespace", "ns", "--json"], environment: environment)
        #expect(try JSONParser.parse(list.stdout).arrayValue?.count == 1)

        let human = try CLI.run(
            ["send", "--namespace", "ns", "--type", "ready", "--session-id", "s9", "--title", "t", "--body", "b"], environment: environment)
        #expect(human.status == 0)
        #expect(human.stdout.contains("Web Push suppressed"))
        let nobody = try CLI.run(
            ["send", "--namespace", "empty", "--type", "ready", "--session-id", "s9", "--title", "t", "--body", "b", "--json"],
            environment: environment)
        #expect(nobody.status == 0)
        #expect(try JSONParser.parse(nobody.stdout)["suppressWebPush"] == false)
    }

    @Test func sendUsageErrorsExitTwo() throws {
        #expect(try CLI.run(["send", "--namespace", "ns"]).status == 2)
        #expect(try CLI.run(["send", "--namespace", "ns", "--type", "ready", "--session-id", "s", "--title", "t", "--body", "b", "--notify-summary", "{bad"]).status == 2)
        #expect(try CLI.run(["send", "--help"]).status == 0)
    }

    @Test func unparseableSettingsExitOne() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-send-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("{oops".utf8).write(to: URL(fileURLWithPath: dir + "/settings.json"))
        let result = try CLI.run(["--data-dir", dir, "send", "--namespace", "ns", "--type", "ready", "--session-id", "s", "--title", "t", "--body", "b"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("settings.json"))
        let config = try CLI.run(["--data-dir", dir, "config", "--json"])
        #expect(config.status == 1)
    }
}
