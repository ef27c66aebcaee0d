import Foundation
import Testing

/// The two commands that test the JavaScript-hub behaviour from outside, by running the built
/// `hapi-push`: `devices register --request` (js-hub-behaviour.md §3) and `compose --event`
/// (§1, §4, §6).
@Suite struct JSHubCLITests {
    static let prefix = #"{"error":"Invalid body","issues":{"formErrors":[],"#
    static let iosToken = String(repeating: "ab", count: 32)
    static let key = "CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk="

    func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("hapi-cli-\(UUID().uuidString)").path
    }

    /// (body, answer, exit status)
    static let registrations: [(String, String, Int32)] = [
        ("", #"{"error":"Invalid body","issues":{"formErrors":["Invalid input: expected object, received null"],"fieldErrors":{}}}"#, 2),
        ("[]", #"{"error":"Invalid body","issues":{"formErrors":["Invalid input: expected object, received array"],"fieldErrors":{}}}"#, 2),
        (
            "{}",
            prefix
                + #""fieldErrors":{"token":["Invalid input: expected string, received undefined"],"platform":["Invalid option: expected one of \"phone\"|\"wear\"|\"ios\""],"deviceId":["Invalid input: expected string, received undefined"]}}}"#,
            2
        ),
        (
            #"{"token":"t","platform":"ios","deviceId":"d"}"#,
            prefix + #""fieldErrors":{"pushKey":["platform \"ios\" requires pushKey: base64 of exactly 32 bytes"]}}}"#, 2
        ),
        (
            #"{"token":"t","platform":"phone","deviceId":"d","pushKey":null}"#,
            prefix + #""fieldErrors":{"pushKey":["Invalid input: expected string, received null"]}}}"#, 2
        ),
        (#"{"token":"\#(iosToken)","platform":"ios","deviceId":"iphone","pushKey":"\#(String(key.dropLast()))"}"#, #"{"ok":true}"#, 0),
        (#"{"token":"fcm:tok","platform":"phone","deviceId":"pixel"}"#, #"{"ok":true}"#, 0),
    ]

    @Test("§3.3 devices register --request (stdin)", arguments: registrations.indices)
    func registerFromStandardInput(_ index: Int) throws {
        let (body, answer, status) = Self.registrations[index]
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let result = try CLI.run(["--data-dir", dir, "devices", "register", "--namespace", "ns", "--request", "-"], input: body)
        #expect(result.status == status, "\(result.stderr)")
        #expect(result.stdout == answer + "\n")
        // A refused body never creates the registry.
        #expect(FileManager.default.fileExists(atPath: dir + "/native-push.sqlite3") == (status == 0))
    }

    @Test("§3.2 devices register --request (file): stored canonical, listed") func registerFromFile() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let file = dir + "/body.json"
        try Data(#"{"token":"\#(Self.iosToken.uppercased())","platform":"ios","deviceId":"iphone","pushKey":"\#(Self.key)="}"#.utf8).write(to: URL(fileURLWithPath: file))
        let result = try CLI.run(["--data-dir", dir, "devices", "register", "--namespace", "ns", "--request", file])
        #expect(result.status == 0)
        #expect(result.stdout == "{\"ok\":true}\n")
        let list = try CLI.run(["--data-dir", dir, "devices", "list", "--namespace", "ns", "--json"])
        #expect(list.stdout.contains(#""deviceId":"iphone""#))
        #expect(list.stdout.contains(#""hasPushKey":true"#))
        #expect(!list.stdout.contains(Self.key) && !list.stdout.contains(Self.iosToken))
    }

    @Test func registerRequestUsageErrors() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let combined = try CLI.run(["--data-dir", dir, "devices", "register", "--namespace", "ns", "--request", "-", "--token", "t"], input: "{}")
        #expect(combined.status == 2)
        #expect(combined.stderr.contains("--token"))
        let missing = try CLI.run(["--data-dir", dir, "devices", "register", "--namespace", "ns", "--request", dir + "/nope.json"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("cannot read"))
        let noNamespace = try CLI.run(["--data-dir", dir, "devices", "register", "--request", "-"], input: "{}")
        #expect(noNamespace.status == 2)
        // A body the handler accepts, an unusable registry: exit 1.
        let unusable = try CLI.run(
            ["--data-dir", "/sys/hapi-cli-test", "devices", "register", "--namespace", "ns", "--request", "-"],
            input: #"{"token":"t","platform":"phone","deviceId":"d"}"#)
        #expect(unusable.status == 1)
    }

    // MARK: - compose

    static func event(_ kind: String, active: Bool = true, metadata: String = #"{"flavor":"claude","name":"hapi"}"#, requests: String? = nil, messages: [String] = [], content: String? = nil) -> String {
        let agentState = requests.map { #","agentState":{"requests":\#($0)}"# } ?? ""
        let rows = messages.enumerated().map { #"{"id":"m\#($0.offset)","seq":\#($0.offset),"localId":null,"createdAt":1787400000000,"content":\#($0.element)}"# }
        var text = #"{"event":"\#(kind)","session":{"id":"0123456789abcdef","active":\#(active),"metadata":\#(metadata)\#(agentState)},"messages":[\#(rows.joined(separator: ","))]"#
        if let content { text += #","content":\#(content)"# }
        return text + "}"
    }

    static func agentText(_ text: String) -> String {
        let escaped = text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return #"{"role":"agent","content":{"type":"output","data":{"type":"assistant","message":{"content":[{"type":"text","text":"\#(escaped)"}]}}}}"#
    }

    static let composed: [(String, String)] = [
        // §6.1
        (
            event("ready", messages: [agentText(#"AGENT_NOTIFY_SUMMARY {"version":1,"summary":"ok","status":"done"}"#)]),
            #"{"body":"ok","contractVersion":"1","notifySummary":"{\"version\":1,\"summary\":\"ok\",\"status\":\"done\"}","sessionId":"0123456789abcdef","sessionName":"hapi","severity":"info","title":"Claude - hapi","type":"ready","url":"/sessions/0123456789abcdef"}"#
        ),
        // R1.3 path C
        (
            event("ready"),
            #"{"body":"Claude is waiting in hapi","contractVersion":"1","sessionId":"0123456789abcdef","sessionName":"hapi","severity":"info","title":"Ready for input","type":"ready","url":"/sessions/0123456789abcdef"}"#
        ),
        // R1.6
        (
            event("permission", requests: #"{"r1":{"tool":"Bash","arguments":{"command":"npm test"}}}"#),
            #"{"body":"Claude Bash: npm test\nSession: hapi\nCommand: npm test","contractVersion":"1","requestId":"r1","sessionId":"0123456789abcdef","sessionName":"hapi","severity":"warning","title":"Permission Request","type":"permission-request","url":"/sessions/0123456789abcdef"}"#
        ),
        // §1.6 (SPEC WINS), as permission or input
        (
            event("input", requests: #"{"q":{"tool":"AskUserQuestion","arguments":{"questions":[{"question":"Which?","options":[]}]}}}"#),
            #"{"body":"Which?\nhapi","contractVersion":"1","requestId":"q","sessionId":"0123456789abcdef","sessionName":"hapi","severity":"info","title":"Claude needs your input","type":"input-request","url":"/sessions/0123456789abcdef"}"#
        ),
        // R1.8
        (
            event("task", content: #"{"type":"output","data":{"type":"system","subtype":"task_notification","summary":"Tests passed","status":"completed"}}"#),
            #"{"body":"Claude · hapi · Tests passed","contractVersion":"1","sessionId":"0123456789abcdef","sessionName":"hapi","severity":"success","title":"Task completed","type":"task-notification","url":"/sessions/0123456789abcdef"}"#
        ),
        // Nothing to send
        (event("ready", active: false), "null"),
        (event("permission", requests: "{}"), "null"),
        (event("permission"), "null"),
        (event("task", content: #"{"type":"output","data":{"type":"text"}}"#), "null"),
    ]

    @Test("§1 §6.1 compose --event", arguments: composed.indices)
    func compose(_ index: Int) throws {
        let (event, expected) = Self.composed[index]
        let result = try CLI.run(["compose", "--event", "-"], input: event)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == expected + "\n")
    }

    @Test("§6.4 compose applies the 3200-byte ladder") func composeLadder() throws {
        let long = String(repeating: "漢", count: 400)
        let footer = #"AGENT_NOTIFY_SUMMARY {"summary":"\#(long)","action":"\#(long)","status":"\#(long)","agent":"\#(long)","project":"\#(long)"}"#
        let result = try CLI.run(["compose", "--event", "-"], input: Self.event("ready", messages: [Self.agentText(footer)]))
        #expect(result.status == 0)
        #expect(!result.stdout.contains("notifySummary"))
        #expect(result.stdout.contains(#""title":"Claude - hapi""#))
    }

    @Test(
        "compose refuses malformed input, naming the problem",
        arguments: [
            ("not json", "not JSON"), ("[]", "JSON object"), (#"{"session":{"id":"s","active":true}}"#, "event must be"),
            (#"{"event":"frob","session":{"id":"s","active":true}}"#, "event must be"), (#"{"event":"ready"}"#, "session must be"),
            (#"{"event":"ready","session":{"active":true}}"#, "session.id"), (#"{"event":"ready","session":{"id":"s"}}"#, "session.active"),
            (#"{"event":"ready","session":{"id":"s","active":true,"metadata":"x"}}"#, "session.metadata"),
            (#"{"event":"ready","session":{"id":"s","active":true},"messages":{}}"#, "messages must be"),
            (#"{"event":"ready","session":{"id":"s","active":true},"messages":[1]}"#, "messages[0]"),
            (#"{"event":"task","session":{"id":"s","active":true}}"#, "content is required"),
        ])
    func composeMalformed(_ input: String, _ problem: String) throws {
        let result = try CLI.run(["compose", "--event", "-"], input: input)
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains(problem), "\(result.stderr)")
    }

    @Test func composeUsage() throws {
        #expect(try CLI.run(["compose"]).status == 2)
        #expect(try CLI.run(["compose", "--event", "/nonexistent/event.json"]).status == 2)
        #expect(try CLI.run(["compose", "--help"]).status == 0)
    }
}
