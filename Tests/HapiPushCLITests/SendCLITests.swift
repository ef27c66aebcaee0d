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

    /// Issue 20, item 4: what `send` is not told comes from the JavaScript hub's composer (the
    /// payload always carries sessionName, url and severity; ready, permission-request and
    /// input-request are worded as it words them).
    @Test func optionsNotGivenAreTheJavaScriptHubsComposition() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in providers.environment(iosMode: "off", androidMode: "fcm", dataDirectory: providers.directory + "/hub") {
            environment[name] = value
        }
        let registered = try CLI.run(
            ["devices", "register", "--namespace", "ns", "--platform", "wear", "--device-id", "watch", "--token", "wear-token"], environment: environment)
        #expect(registered.status == 0, "\(registered.stderr)")
        let cases: [(arguments: [String], expected: [String: String])] = [
            (
                ["--type", "ready", "--session-id", "0123456789abcdef"],
                [
                    "title": "Ready for input", "body": "Agent is waiting in 01234567", "sessionName": "01234567", "severity": "info",
                    "url": "/sessions/0123456789abcdef",
                ]
            ),
            (
                ["--type", "permission-request", "--session-id", "s1", "--session-name", "hapi", "--request-id", "r-7"],
                ["title": "Permission Request", "body": "Agent - hapi\nSession: hapi", "sessionName": "hapi", "severity": "warning", "requestId": "r-7"]
            ),
            (
                ["--type", "input-request", "--session-id", "s2", "--session-name", "hapi"],
                ["title": "Agent needs your input", "body": "Open the session to view and answer the question", "severity": "info"]
            ),
            (
                ["--type", "ready", "--session-id", "s3", "--title", "t", "--body", "b", "--severity", "success", "--session-name", "n", "--url", "/x"],
                ["title": "t", "body": "b", "severity": "success", "sessionName": "n", "url": "/x"]
            ),
        ]
        for (arguments, expected) in cases {
            providers.clearRequests()
            let sent = try CLI.run(["send", "--namespace", "ns", "--json"] + arguments, environment: environment)
            #expect(sent.status == 0, "\(arguments): \(sent.stderr)")
            let request = try #require(providers.fcm.requests.first { $0.path != "/token" })
            let data = try #require(try JSONParser.parse(request.body)["message"]?["data"])
            for (key, value) in expected {
                #expect(data[key]?.stringValue == value, "\(arguments): \(key) = \(String(describing: data[key]))")
            }
        }
        // A task notification's text is its summary: no default for it.
        let task = try CLI.run(["send", "--namespace", "ns", "--type", "task-notification", "--session-id", "s"], environment: environment)
        #expect(task.status == 2)
        #expect(task.stderr.contains("--title"))
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
