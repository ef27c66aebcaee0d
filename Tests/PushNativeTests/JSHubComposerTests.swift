import Testing

import PushTransports
import DeviceRegistry
import PushEnvelope
@testable import PushNative

/// js-hub-behaviour.md §1 and §2: every verified example of the JavaScript hub's notification
/// text, from the same inputs, plus our deliberate differences (each marked).
enum HubFixture {
    static let id = "0123456789abcdef"
    /// The fixture session: active, `{flavor:"claude", name:"hapi"}`: agent "Claude", name "hapi".
    static func session(metadata: JSONValue = ["flavor": "claude", "name": "hapi"], requests: JSONValue? = nil) -> PushSession {
        PushSession(id: id, active: true, metadata: metadata, agentState: requests.map { ["requests": $0] } ?? .null)
    }

    /// A stored Claude message content whose assistant output is these text blocks.
    static func agent(_ texts: String...) -> JSONValue {
        let blocks = texts.map { JSONValue.object([(key: "type", value: "text"), (key: "text", value: .string($0))]) }
        return ["role": "agent", "content": ["type": "output", "data": ["type": "assistant", "message": ["content": .array(blocks)]]]]
    }

    static func user(_ text: String) -> JSONValue {
        ["role": "user", "content": ["type": "text", "text": .string(text)]]
    }

    static func json(_ text: String) -> JSONValue {
        (try? JSONParser.parse(text)) ?? .null
    }
}

@Suite struct JSHubSessionTests {
    @Test(
        "R1.1 session name",
        arguments: [
            (#"{"name":"hapi"}"#, "hapi"),
            (#"{"name":"","summary":{"text":"Fix bug"}}"#, "Fix bug"),
            (#"{"summary":{"text":"Fix bug"},"path":"/home/u/proj"}"#, "Fix bug"),
            (#"{"path":"/home/u/proj/"}"#, "proj"),
            (#"{"path":"/"}"#, "01234567"), (#"{"path":""}"#, "01234567"), ("{}", "01234567"), ("null", "01234567"),
            (#"{"name":"  "}"#, "  "),
            (#"{"path":"C:\\Users\\u\\proj"}"#, #"C:\Users\u\proj"#),
            // Not strings: skipped (JavaScript would put the value itself in the payload).
            (#"{"name":5,"path":"a/b"}"#, "b"),
        ])
    func sessionName(_ metadata: String, _ name: String) {
        #expect(HubFixture.session(metadata: HubFixture.json(metadata)).displayName == name)
    }

    @Test("R1.1 the id prefix is 8 UTF-16 units, never half a pair (deliberate)") func idPrefix() {
        #expect(PushSession(id: "abcdefgh-ijk").displayName == "abcdefgh")
        #expect(PushSession(id: "abcdefg😀xyz").displayName == "abcdefg")  // JS: "abcdefg\ud83d"
    }

    @Test(
        "R1.2 agent name",
        arguments: [
            ("agy", "Antigravity"), ("claude", "Claude"), ("gemini", "Gemini"), ("kimi", "Kimi"), ("copilot", "Copilot"), ("grok", "Grok Build"),
            ("codex", "Codex"), ("dsh", "DeepSeek Harness"), ("cursor", "Cursor"), ("opencode", "OpenCode"), ("pi", "Pi"), ("Claude", "Agent"),
            ("toString", "Agent"), ("", "Agent"),
        ])
    func agentName(_ flavor: String, _ name: String) {
        #expect(HubFixture.session(metadata: ["flavor": .string(flavor)]).agentName == name)
    }

    @Test("R1.2 no flavor is Agent") func noFlavor() {
        #expect(HubFixture.session(metadata: ["name": "x"]).agentName == "Agent")
        #expect(HubFixture.session(metadata: ["flavor": 1]).agentName == "Agent")
    }

    @Test("R1.4 the first pending request follows JavaScript's property order") func firstRequest() {
        let session = HubFixture.session(requests: HubFixture.json(#"{"b":{"tool":"Bash"},"a":{},"10":{},"2":{}}"#))
        #expect(session.pendingRequests.map(\.id) == ["2", "10", "b", "a"])
        #expect(PushNotificationComposer.permissionRequest(for: session).requestId == "2")
    }
}

@Suite struct JSHubTextTests {
    @Test(
        "§1.2 T-ready with limit 280",
        arguments: [
            (String(repeating: "A", count: 281), String(repeating: "A", count: 277) + "..."),
            (String(repeating: "A", count: 280), String(repeating: "A", count: 280)),
            (String(repeating: "A", count: 276) + String(repeating: "     B", count: 3), String(repeating: "A", count: 276) + "..."),
            ("  Hello world  \n", "Hello world"),
            // Deliberate: JavaScript cuts inside the 139th emoji and sends a lone \ud83d (280
            // units); we cut before it (279 units).
            (String(repeating: "😀", count: 200), String(repeating: "😀", count: 138) + "..."),
        ])
    func readyTruncation(_ input: String, _ output: String) {
        #expect(HubText.readyTruncate(input, limit: 280) == output)
    }

    @Test("§1.2 T-ready small limits and T-tool") func smallLimits() {
        #expect(HubText.readyTruncate("abcdef", limit: 3) == "...")
        #expect(HubText.readyTruncate("abcdef", limit: 2) == "..")
        #expect(HubText.readyTruncate("abcdef", limit: 1) == ".")
        #expect(HubText.readyTruncate("abcdef", limit: 0) == "")
        #expect(HubText.readyTruncate("   ", limit: 10) == "")
        #expect(HubText.toolTruncate("  abcdef", max: 6) == "  a...")
        #expect(HubText.toolTruncate("abcdef", max: 6) == "abcdef")
    }

    @Test("§0 JavaScript's trim set") func trimSet() {
        let all = "\u{09}\u{0A}\u{0B}\u{0C}\u{0D}\u{20}\u{A0}\u{1680}\u{2000}\u{200A}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}\u{FEFF}"
        #expect(HubText.trim(all + "x" + all) == "x")
        for kept in ["\u{85}", "\u{180E}", "\u{200B}"] { #expect(HubText.trim(kept) == kept) }
    }
}

@Suite struct JSHubReadyTests {
    static let footer1 = #"AGENT_NOTIFY_SUMMARY {"version":1,"summary":"Tokens revoked","action":"Upload preview","status":"done"}"#

    /// (messages, title, body, notifySummary)
    static let cases: [([JSONValue], String, String, String?)] = [
        ([], "Ready for input", "Claude is waiting in hapi", nil),
        ([HubFixture.agent("   ")], "Ready for input", "Claude is waiting in hapi", nil),
        ([HubFixture.agent("  Hello world  \n")], "Claude - hapi", "Hello world", nil),
        (
            [HubFixture.agent("Did the work.\n\n" + footer1)], "Claude - hapi", "Tokens revoked\n-> Upload preview",
            #"{"version":1,"summary":"Tokens revoked","action":"Upload preview","status":"done"}"#
        ),
        ([HubFixture.agent(#"AGENT_NOTIFY_SUMMARY {"summary":"same","action":"same"}"#)], "Claude - hapi", "same", #"{"summary":"same","action":"same"}"#),
        (
            [HubFixture.agent(#"AGENT_NOTIFY_SUMMARY {"summary":"  padded  ","action":"  go  "}"#)], "Claude - hapi", "padded\n->   go",
            #"{"summary":"padded","action":"go"}"#
        ),
        (
            [HubFixture.agent(#"AGENT_NOTIFY_SUMMARY {"summary":"   ","action":"go","status":"  "}"#)], "Claude - hapi", "-> go",
            #"{"summary":"","action":"go","status":""}"#
        ),
        (
            [HubFixture.agent("Done.\n" + #"AGENT_NOTIFY_SUMMARY {"status":"ok"}"#)], "Claude - hapi", "Done.\n" + #"AGENT_NOTIFY_SUMMARY {"status":"ok"}"#,
            nil
        ),
        (
            [HubFixture.agent(#"AGENT_NOTIFY_SUMMARY {"summary":"line1\nline2","action":"go"}"#)], "Claude - hapi", "line1\nline2\n-> go",
            #"{"summary":"line1\nline2","action":"go"}"#
        ),
        ([HubFixture.agent("Older."), HubFixture.user("hi")], "Claude - hapi", "Older.", nil),
        (
            [
                [
                    "role": "agent",
                    "content": [
                        "type": "output",
                        "data": [
                            "type": "assistant",
                            "message": [
                                "content": [
                                    ["type": "text", "text": "Part one"], ["type": "tool_use", "name": "Bash"],
                                    ["type": "text", "text": #"AGENT_NOTIFY_SUMMARY {"summary":"two"}"#],
                                ]
                            ],
                        ],
                    ],
                ]
            ], "Claude - hapi", "two", #"{"summary":"two"}"#
        ),
    ]

    @Test("R1.3 ready", arguments: cases.indices)
    func ready(_ index: Int) {
        let (messages, title, body, summary) = Self.cases[index]
        let payload = PushNotificationComposer.ready(for: HubFixture.session(), messages: messages)
        #expect(payload.type == .ready)
        #expect(payload.title == title)
        #expect(payload.body == body)
        #expect(payload.notifySummary == summary)
        #expect(payload.severity == .info)
        #expect(payload.requestId == nil)
        #expect(payload.sessionName == "hapi")
        #expect(payload.url == "/sessions/0123456789abcdef")
    }

    @Test(
        "R1.3 the action budget",
        arguments: [
            (270, String(repeating: "S", count: 270) + "\n-> ACTION"), (275, String(repeating: "S", count: 275) + "\n-..."),
            (276, String(repeating: "S", count: 276) + "\n..."), (277, String(repeating: "S", count: 277) + "\n.."),
            (278, String(repeating: "S", count: 278) + "\n."), (279, String(repeating: "S", count: 279)),
            (400, String(repeating: "S", count: 277) + "..."),
        ])
    func actionBudget(_ length: Int, _ body: String) {
        let text = #"AGENT_NOTIFY_SUMMARY {"summary":"\#(String(repeating: "S", count: length))","action":"ACTION"}"#
        #expect(PushNotificationComposer.ready(for: HubFixture.session(), messages: [HubFixture.agent(text)]).body == body)
    }

    @Test("R1.3 message shapes") func messageShapes() {
        func text(_ message: JSONValue) -> String {
            PushNotificationComposer.ready(for: HubFixture.session(), messages: [message]).body
        }
        let codex: JSONValue = ["role": "agent", "content": ["type": "codex", "data": ["type": "message", "message": "From Codex"]]]
        #expect(text(codex) == "From Codex")
        let agy: JSONValue = ["role": "agent", "content": ["type": "output", "data": ["type": "agy_message", "content": "From Antigravity"]]]
        #expect(text(agy) == "From Antigravity")
        // The role record may sit under .message, .data.message or .payload.message.
        for wrapper in ["message", "data", "payload"] {
            let record: JSONValue = ["role": "agent", "content": ["type": "codex", "data": ["type": "message", "message": .string(wrapper)]]]
            let content: JSONValue = wrapper == "message" ? ["message": record] : [wrapper: ["message": record]]
            #expect(text(content) == wrapper)
        }
        // Tool calls, results and events carry no text; a user message is skipped, not a stop.
        let tool: JSONValue = ["role": "agent", "content": ["type": "output", "data": ["type": "assistant", "message": ["content": [["type": "tool_use"]]]]]]
        #expect(text(tool) == "Claude is waiting in hapi")
        let messages = [HubFixture.agent("Older.")] + [HubFixture.user("x")] + Array(repeating: tool, count: 18)
        #expect(PushNotificationComposer.ready(for: HubFixture.session(), messages: messages).body == "Older.")
        // Only the last 20 messages are read.
        #expect(PushNotificationComposer.ready(for: HubFixture.session(), messages: messages + [tool]).body == "Claude is waiting in hapi")
    }
}

@Suite struct JSHubNotifySummaryTests {
    static let j = #"{"summary":"ok"}"#
    static let ok = AgentNotifySummary(summary: "ok")

    static let cases: [(String, AgentNotifySummary?)] = [
        ("Done.AGENT_NOTIFY_SUMMARY " + j, ok),
        ("Example: AGENT_NOTIFY_SUMMARY " + j, nil),
        ("\t  AGENT_NOTIFY_SUMMARY " + j, ok),
        ("(AGENT_NOTIFY_SUMMARY " + j, ok),
        ("AGENT_NOTIFY_SUMMARY " + j + " trailing", nil),
        ("AGENT_NOTIFY_SUMMARY " + j + "\r\n\r\n", ok),
        ("AGENT_NOTIFY_SUMMARY\t" + j, nil),
        ("AGENT_NOTIFY_SUMMARY" + j, nil),
        ("AGENT_NOTIFY_SUMMARY    " + j + "   ", ok),
        (#"AGENT_NOTIFY_SUMMARY {"summary":"a"} {"b":1}"#, nil),
        ("x AGENT_NOTIFY_SUMMARY " + j + #" yAGENT_NOTIFY_SUMMARY {"summary":"second"}"#, AgentNotifySummary(summary: "second")),
        (
            #"AGENT_NOTIFY_SUMMARY {"summary":"Fixed AGENT_NOTIFY_SUMMARY parsing","status":"done"}"#,
            AgentNotifySummary(summary: "Fixed AGENT_NOTIFY_SUMMARY parsing", status: "done")
        ),
        (#"AGENT_NOTIFY_SUMMARY {"summary":1,"status":null,"version":"2","agent":["a"]}"#, AgentNotifySummary()),
        (#"AGENT_NOTIFY_SUMMARY {"summary":"x","summary":"dup-last"}"#, AgentNotifySummary(summary: "dup-last")),
        ("AGENT_NOTIFY_SUMMARY " + j + "\nOh, one more thing.", nil),
        ("```\nAGENT_NOTIFY_SUMMARY " + j + "\n```", nil),
        ("prose\u{2028}AGENT_NOTIFY_SUMMARY " + j, nil),
        ("AGENT_NOTIFY_SUMMARY " + j + "\n\u{A0}", ok),
        ("AGENT_NOTIFY_SUMMARY " + j + "\n\u{85}", nil),
        (#"AGENT_NOTIFY_SUMMARY {"summary":"ok",}"#, nil),
    ]

    @Test("§2.3 locating the footer", arguments: cases.indices)
    func locating(_ index: Int) {
        let (text, expected) = Self.cases[index]
        #expect(AgentNotifySummary.extract(from: text) == expected, "\(text.debugDescription)")
    }

    @Test("§2.4 per-field limits") func limits() {
        let footer = AgentNotifySummary.extract(from: #"AGENT_NOTIFY_SUMMARY {"summary":"s","status":"\#(String(repeating: "d", count: 40))"}"#)
        #expect(footer?.serialized == #"{"summary":"s","status":"\#(String(repeating: "d", count: 29))..."}"#)
        let long = String(repeating: "x", count: 100)
        let all = AgentNotifySummary(summary: long, action: long, status: long, agent: long, project: long).serialized
        let limited = String(repeating: "x", count: 77) + "..."
        #expect(all.contains(#""agent":"\#(limited)","project":"\#(limited)""#))
        #expect(all.contains(#""summary":"\#(long)","action":"\#(long)""#))
    }

    @Test("§2.5 insertion order, not sorted") func insertionOrder() {
        let footer = AgentNotifySummary.extract(
            from: #"AGENT_NOTIFY_SUMMARY {"project":"p","agent":"a","status":"s","action":"x","summary":"y","version":2,"extra":true}"#)
        #expect(footer?.serialized == #"{"version":2,"summary":"y","action":"x","status":"s","agent":"a","project":"p"}"#)
    }

    @Test(
        "§2.5 version is written as JavaScript prints numbers",
        arguments: [("1.0", "1"), ("-0", "0"), ("1e21", "1e+21"), ("1e-7", "1e-7"), ("12345678901234567890", "12345678901234567000")])
    func versions(_ written: String, _ printed: String) {
        let footer = AgentNotifySummary.extract(from: #"AGENT_NOTIFY_SUMMARY {"version":\#(written),"summary":"s"}"#)
        #expect(footer?.serialized == #"{"version":\#(printed),"summary":"s"}"#)
    }

    @Test("§2.5 string escapes (a lone surrogate becomes U+FFFD: deliberate)") func escapes() {
        let footer = AgentNotifySummary.extract(from: #"AGENT_NOTIFY_SUMMARY {"summary":"a/b \u2028 \u007f \u0001 \ud83d"}"#)
        // JavaScript: the same, but the lone surrogate written as the escape \ud83d.
        #expect(footer?.serialized == "{\"summary\":\"a/b \u{2028} \u{7F} \\u0001 \u{FFFD}\"}")
    }

    @Test("§2.2 {} is a footer without fields; path A needs a summary") func emptyFooter() {
        #expect(AgentNotifySummary.extract(from: "AGENT_NOTIFY_SUMMARY {}") == AgentNotifySummary())
        let payload = PushNotificationComposer.ready(for: HubFixture.session(), messages: [HubFixture.agent("AGENT_NOTIFY_SUMMARY {}")])
        #expect(payload.body == "AGENT_NOTIFY_SUMMARY {}")
        #expect(payload.notifySummary == nil)
    }
}

@Suite struct JSHubPermissionTests {
    /// (requests JSON, body)
    static let cases: [(String, String)] = [
        (
            #"{"req-99":{"tool":"Edit","arguments":{"file_path":"/home/u/proj/hub/src/server.ts","old_string":"foo","new_string":"bar"}}}"#,
            "Claude Edit: .../src/server.ts\nSession: hapi\nFile: /home/u/proj/hub/src/server.ts\nOld: \"foo\"\nNew: \"bar\""
        ),
        (#"{"r1":{"tool":"Bash","arguments":{"command":"npm test"}}}"#, "Claude Bash: npm test\nSession: hapi\nCommand: npm test"),
        (#"{"r1":{"tool":"Bash","arguments":{}}}"#, "Claude Bash\nSession: hapi\nCommand: "),
        (
            #"{"r1":{"tool":"Bash","arguments":{"command":"\#(String(repeating: "x", count: 200))"}}}"#,
            "Claude Bash: " + String(repeating: "x", count: 57) + "...\nSession: hapi\nCommand: " + String(repeating: "x", count: 117) + "..."
        ),
        (#"{"r1":{"tool":"Write","arguments":{"path":"a/b.txt","content":"hello"}}}"#, "Claude Write: a/b.txt\nSession: hapi\nFile: a/b.txt (5 chars)"),
        (
            #"{"r1":{"tool":"Write","arguments":{"file_path":"x/y/z.txt","content":"😀"}}}"#,
            "Claude Write: .../y/z.txt\nSession: hapi\nFile: x/y/z.txt (2 chars)"
        ),
        (#"{"r1":{"tool":"Read","arguments":{}}}"#, "Claude Read\nSession: hapi\nFile: unknown"),
        (#"{"r1":{"tool":"Agent","arguments":{"description":"d","prompt":"p"}}}"#, "Claude Agent: d\nSession: hapi\nTask: d"),
        (#"{"r1":{"tool":"Grep","arguments":{"pattern":"TODO","path":"/src"}}}"#, "Claude Grep: TODO\nSession: hapi\nPattern: TODO\nPath: /src"),
        (
            #"{"r1":{"tool":"WebFetch","arguments":{"url":"https://example.com:8080/a?b"}}}"#,
            "Claude WebFetch: example.com:8080\nSession: hapi\nURL: https://example.com:8080/a?b"
        ),
        (#"{"r1":{"tool":"TodoWrite","arguments":{"todos":[1,2,3]}}}"#, "Claude TodoWrite: 3 items\nSession: hapi\nUpdating 3 todo items"),
        (#"{"r1":{"tool":"mcp__x__y","arguments":{"foo":"bar"}}}"#, "Claude mcp__x__y\nSession: hapi\nArgs: {\"foo\":\"bar\"}"),
        (#"{"r1":{"tool":"mcp__x__y","arguments":{"a":1}}}"#, "Claude mcp__x__y\nSession: hapi"),
        (#"{"r1":{"tool":"Bash","arguments":"ls"}}"#, "Claude Bash\nSession: hapi"),
        (#"{"r1":{"arguments":{"command":"ls"}}}"#, "Claude - hapi\nSession: hapi\nArgs: {\"command\":\"ls\"}"),
        ("{}", "Claude - hapi\nSession: hapi"),
        // §1.6: JavaScript sends questions as permission requests with raw arguments.
        (
            #"{"r1":{"tool":"AskUserQuestion","arguments":{"questions":[{"question":"Which?","options":[]}]}}}"#,
            "Claude AskUserQuestion\nSession: hapi\nArgs: {\"questions\":[{\"question\":\"Which?\",\"options\":[]}]}"
        ),
        // Edge cases of R1.6.
        (#"{"r1":{"tool":"Bash","arguments":{"command":123}}}"#, "Claude Bash\nSession: hapi"),
        (#"{"r1":{"tool":"Read","arguments":{"file_path":"/etc/hosts"}}}"#, "Claude Read: .../etc/hosts\nSession: hapi\nFile: /etc/hosts"),
        (#"{"r1":{"tool":"Read","arguments":{"file_path":"/a"}}}"#, "Claude Read: /a\nSession: hapi\nFile: /a"),
        (#"{"r1":{"tool":"Read","arguments":{"file_path":null,"path":"p/q"}}}"#, "Claude Read: p/q\nSession: hapi\nFile: p/q"),
        (#"{"r1":{"tool":"Task","arguments":{"prompt":"p"}}}"#, "Claude Task: p\nSession: hapi\nTask: p"),
        (#"{"r1":{"tool":"TodoWrite","arguments":{}}}"#, "Claude TodoWrite: 0 items\nSession: hapi\nUpdating 0 todo items"),
        (#"{"r1":{"tool":"WebFetch","arguments":{"url":"https://Example.COM:443/x"}}}"#, "Claude WebFetch: example.com\nSession: hapi\nURL: https://Example.COM:443/x"),
        (#"{"r1":{"tool":"WebFetch","arguments":{"url":"not a url"}}}"#, "Claude WebFetch: not a url\nSession: hapi\nURL: not a url"),
        // JSON.stringify(arguments) in JavaScript's property order: index keys first.
        (#"{"r1":{"tool":"x","arguments":{"b":"long enough","10":1,"2":2}}}"#, "Claude x\nSession: hapi\nArgs: {\"2\":2,\"10\":1,\"b\":\"long enough\"}"),
    ]

    @Test("R1.5 R1.6 permission bodies", arguments: cases.indices)
    func permission(_ index: Int) {
        let (requests, body) = Self.cases[index]
        let payload = PushNotificationComposer.permissionRequest(for: HubFixture.session(requests: HubFixture.json(requests)))
        #expect(payload.body == body)
        #expect(payload.title == "Permission Request")
        #expect(payload.severity == .warning)
        #expect(payload.type == .permissionRequest)
        #expect(payload.requestId == (requests == "{}" ? nil : HubFixture.session(requests: HubFixture.json(requests)).pendingRequests.first?.id))
    }

    @Test("R1.5 the session line is dropped when it equals the glance line") func sessionLineDropped() {
        let session = HubFixture.session(
            metadata: ["flavor": "claude", "name": "Claude Bash: ls"], requests: HubFixture.json(#"{"r1":{"tool":"Bash","arguments":{"command":"ls"}}}"#))
        #expect(PushNotificationComposer.permissionRequest(for: session).body == "Claude Bash: ls\nCommand: ls")
    }

    @Test("§1.6 a question becomes an input-request (SPEC WINS)") func questions() throws {
        let session = HubFixture.session(
            requests: HubFixture.json(#"{"r1":{"tool":"AskUserQuestion","arguments":{"questions":[{"question":"Which?","options":[]}]}}}"#))
        let payload = try #require(PushNotificationComposer.pendingRequest(for: session))
        #expect(payload.type == .inputRequest)
        #expect(payload.title == "Claude needs your input")
        #expect(payload.body == "Which?\nhapi")
        #expect(payload.severity == .info)
        #expect(payload.requestId == "r1")
        #expect(payload.sessionName == "hapi")
        let bash = HubFixture.session(requests: HubFixture.json(#"{"r1":{"tool":"Bash","arguments":{"command":"ls"}}}"#))
        #expect(PushNotificationComposer.pendingRequest(for: bash) == PushNotificationComposer.permissionRequest(for: bash))
    }

    @Test("§4.2 nothing pending at fire time: nothing to send (deliberate)") func nothingPending() {
        #expect(PushNotificationComposer.pendingRequest(for: HubFixture.session(requests: [:])) == nil)
        #expect(PushNotificationComposer.pendingRequest(for: HubFixture.session()) == nil)
    }
}

@Suite struct JSHubTaskTests {
    static func system(_ summary: JSONValue, _ status: JSONValue?) -> JSONValue {
        var data: [(key: String, value: JSONValue)] = [("type", "system"), ("subtype", "task_notification"), ("summary", summary)]
        if let status { data.append((key: "status", value: status)) }
        return ["type": "output", "data": .object(data)]
    }

    static func user(_ text: String) -> JSONValue {
        ["type": "output", "data": ["type": "user", "content": .string(text)]]
    }

    /// (content, title, body, severity); nil title: no task notification.
    static let cases: [(JSONValue, String?, String, PushNotificationSeverity)] = [
        (system("Tests passed", "completed"), "Task completed", "Claude · hapi · Tests passed", .success),
        (user("<task-notification><status>FAILED</status><summary>\n lint \n</summary></task-notification>"), "Task failed", "Claude · hapi · lint", .error),
        (system(.string(String(repeating: "T", count: 300)), nil), "Task completed", "Claude · hapi · " + String(repeating: "T", count: 277) + "...", .success),
        (system("x", "  Killed "), "Task failed", "Claude · hapi · x", .error),
        (system("x", "aborted"), "Task failed", "Claude · hapi · x", .error),
        (system("x", "error"), "Task failed", "Claude · hapi · x", .error),
        (system("x", "cancelled"), "Task completed", "Claude · hapi · x", .success),
        (system("x", "timeout"), "Task completed", "Claude · hapi · x", .success),
        (system("x", "  "), "Task completed", "Claude · hapi · x", .success),
        (system("x", 5), "Task completed", "Claude · hapi · x", .success),
        (system("   ", "failed"), nil, "", .success),
        (system(5, "failed"), nil, "", .success),
        // The inner content.content is tried first, then the outer content.
        (["role": "agent", "content": system("inner", "failed")], "Task failed", "Claude · hapi · inner", .error),
        (["type": "output", "data": ["type": "user", "message": ["content": "  \n<task-notification>\n<summary>s</summary>"]]], "Task completed", "Claude · hapi · s", .success),
        (user("prefix <task-notification><summary>s</summary>"), nil, "", .success),
        (user("<task-notification><summary> </summary>"), nil, "", .success),
        (user("<task-notification><summary>first</summary><summary>second</summary><status></status>"), "Task completed", "Claude · hapi · first", .success),
        (["type": "event", "data": ["type": "ready"]], nil, "", .success),
    ]

    @Test("R1.7 R1.8 task notifications", arguments: cases.indices)
    func task(_ index: Int) {
        let (content, title, body, severity) = Self.cases[index]
        let payload = PushNotificationComposer.taskNotification(for: HubFixture.session(), content: content)
        guard let title else {
            #expect(payload == nil)
            return
        }
        #expect(payload?.title == title)
        #expect(payload?.body == body)
        #expect(payload?.severity == severity)
        #expect(payload?.type == .taskNotification)
        #expect(payload?.requestId == nil)
        #expect(payload?.sessionName == "hapi")
    }

    @Test("R1.7 status extraction") func status() {
        #expect(HubMessageContent.taskNotification(in: Self.system("x", "  "))?.status == "")
        #expect(HubMessageContent.taskNotification(in: Self.system("x", 5))?.status == nil)
        #expect(HubMessageContent.taskNotification(in: Self.user("<task-notification><summary>s</summary><status> </status>"))?.status == nil)
    }

    @Test("§4.1 ready events") func readyEvents() {
        #expect(PushNotificationComposer.isReadyEvent(["type": "event", "data": ["type": "ready"]]))
        #expect(PushNotificationComposer.isReadyEvent(["role": "user", "content": ["type": "event", "data": ["type": "ready"]]]))
        #expect(!PushNotificationComposer.isReadyEvent(["type": "event", "data": ["type": "other"]]))
        #expect(!PushNotificationComposer.isReadyEvent(["type": "output", "data": ["type": "ready"]]))
    }
}
