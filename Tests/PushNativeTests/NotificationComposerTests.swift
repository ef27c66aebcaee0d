import Testing

import PushTransports
import DeviceRegistry
import PushEnvelope
@testable import PushNative

@Suite struct NotificationComposerTests {
    let session = PushNotificationComposer.Session(id: "abc", agent: "Claude", project: "hapi")

    @Test func readyPermissionAndTaskFollowTheContract() {
        let ready = PushNotificationComposer.ready(session)
        #expect(ready.type == .ready)
        #expect(ready.severity == .info)
        #expect(ready.url == "/sessions/abc")
        #expect(ready.sessionName == "Claude - hapi")
        #expect(ready.contractVersion == "1")
        #expect(ready.notifySummary == nil)
        let permission = PushNotificationComposer.permissionRequest(session, requestId: "req-1", toolName: "Bash", detail: "rm -rf\n build")
        #expect(permission.type == .permissionRequest)
        #expect(permission.severity == .warning)
        #expect(permission.requestId == "req-1")
        #expect(permission.body == "Bash: rm -rf build")
        for status in ["failed", "error", "killed", "aborted", "FAILED"] {
            #expect(PushNotificationComposer.taskNotification(session, status: status).severity == .error, "\(status)")
        }
        for status in ["completed", "done", "success"] {
            #expect(PushNotificationComposer.taskNotification(session, status: status).severity == .success, "\(status)")
        }
        #expect(PushNotificationComposer.taskNotification(session, status: "done").type == .taskNotification)
        #expect(PushNotificationComposer.ready(.init(id: "x", agent: "Codex")).sessionName == "Codex")
        #expect(PushNotificationComposer.ready(.init(id: "x", agent: "Codex", url: "/custom")).url == "/custom")
    }

    @Test func notifySummaryComesFromATrailingLine() {
        let text = "Done.\nAll tests pass.\nAGENT_NOTIFY_SUMMARY {\"files\": 3, \"status\":\"ok\"}\n\n"
        #expect(PushNotificationComposer.ready(session, lastAgentText: text).notifySummary == #"{"files":3,"status":"ok"}"#)
        #expect(PushNotificationComposer.notifySummary(in: "AGENT_NOTIFY_SUMMARY {\"a\":1}\nmore text") == nil)
        #expect(PushNotificationComposer.notifySummary(in: "AGENT_NOTIFY_SUMMARY not json") == nil)
        #expect(PushNotificationComposer.notifySummary(in: "AGENT_NOTIFY_SUMMARY{\"a\":1}") == nil)
        #expect(PushNotificationComposer.notifySummary(in: "no summary") == nil)
        #expect(PushNotificationComposer.notifySummary(in: "  AGENT_NOTIFY_SUMMARY [1, 2]") == "[1,2]")
    }

    @Test(arguments: [
        "request_user_input", "AskUserQuestion", "ask_user_question", "CursorAskQuestion", "functions.request_user_input",
        "functions.AskUserQuestion",
    ])
    func questionToolsAreQuestions(_ name: String) {
        #expect(PushNotificationComposer.isQuestionTool(name))
        #expect(PushNotificationComposer.inputRequest(session, requestId: "r", toolName: name, arguments: ["questions": [["question": "Q?"]]]) != nil)
    }

    @Test(arguments: ["ExitPlanMode", "Bash", "mcp__server__AskUserQuestion", "mcp__x__ask_user_question", "functions.ExitPlanMode", "askuserquestion", ""])
    func otherToolsAreNotQuestions(_ name: String) {
        #expect(!PushNotificationComposer.isQuestionTool(name))
        #expect(PushNotificationComposer.inputRequest(session, requestId: "r", toolName: name, arguments: ["questions": [["question": "Q?"]]]) == nil)
    }

    func body(_ arguments: JSONValue?, session: PushNotificationComposer.Session? = nil) -> String {
        PushNotificationComposer.inputRequest(session ?? self.session, requestId: "r", toolName: "AskUserQuestion", arguments: arguments)?.body ?? "<nil>"
    }

    @Test func bodyShowsFirstQuestionCountAndSession() throws {
        let payload = try #require(
            PushNotificationComposer.inputRequest(
                session, requestId: "r-9", toolName: "AskUserQuestion",
                arguments: [
                    "questions": [
                        ["question": "Which   database\nshould we use?", "header": "DB", "options": [["label": "Postgres"], ["label": "SQLite"]]],
                        ["question": "", "header": "Auth"], ["question": "   ", "header": ""], ["question": "Deploy now?"],
                    ]
                ]))
        #expect(payload.type == .inputRequest)
        #expect(payload.title == "Claude needs your input")
        #expect(payload.severity == .info)
        #expect(payload.requestId == "r-9")
        #expect(payload.body == "Which database should we use?\n+2 more questions\nClaude - hapi")
        #expect(!payload.body.contains("Postgres"))
        #expect(body(["questions": [["question": "One?"], ["question": "Two?"]]]) == "One?\n+1 more question\nClaude - hapi")
        #expect(body(["questions": [["question": "", "header": "Header only"]]]) == "Header only\nClaude - hapi")
        #expect(body(["question": "Codex style?"]) == "Codex style?\nClaude - hapi")
    }

    @Test(arguments: [
        nil, JSONValue.null, "text", ["questions": "not a list"], ["questions": []], ["questions": [1, 2]], ["questions": [["question": "", "header": " "]]],
        ["other": 1],
    ] as [JSONValue?])
    func malformedInputFallsBack(_ arguments: JSONValue?) {
        #expect(body(arguments) == "Open the session to view and answer the question")
    }

    @Test func sessionNameIsCappedAt80ScalarsAtGraphemeBoundaries() {
        // 79 ASCII + a family emoji (7 scalars): the emoji cannot fit with the ellipsis, so it goes whole.
        let family = "👨‍👩‍👧‍👦"
        let longProject = String(repeating: "p", count: 70) + family + "tail"
        let name = PushNotificationComposer.Session(id: "s", agent: "Agent", project: longProject).displayName
        let text = body(["questions": [["question": "Q?"]]], session: .init(id: "s", agent: "Agent", project: longProject))
        let shownName = String(text.split(separator: "\n").last ?? "")
        #expect(name.unicodeScalars.count > 80)
        #expect(shownName.unicodeScalars.count <= 80)
        #expect(shownName.hasSuffix("…"))
        #expect(!shownName.contains("\u{200D}"))  // no half family
        // Exactly 80 scalars passes untouched.
        let exact = String(repeating: "x", count: 72)  // "Agent - " is 8
        let exactText = body(["questions": [["question": "Q?"]]], session: .init(id: "s", agent: "Agent", project: exact))
        #expect(exactText.hasSuffix("Agent - " + exact))
        let over = body(["questions": [["question": "Q?"]]], session: .init(id: "s", agent: "Agent", project: exact + "y"))
        #expect(over.split(separator: "\n").last?.unicodeScalars.count == 80)
    }

    @Test func bodyIsCappedAt280ScalarsWithoutSplittingGraphemes() {
        let combining = "e\u{301}"  // one grapheme, two scalars
        let question = String(repeating: combining, count: 200)
        let text = body(["questions": [["question": .string(question)]]])
        #expect(text.unicodeScalars.count <= 280)
        let firstLine = String(text.split(separator: "\n").first ?? "")
        #expect(firstLine.hasSuffix("…"))
        // Every kept grapheme is whole: no bare combining mark and no lone base letter.
        #expect(firstLine.dropLast().allSatisfy { $0 == Character(combining) })
        // The emoji case: flags are two scalars each.
        let flags = String(repeating: "🇫🇷", count: 200)
        let flagText = body(["questions": [["question": .string(flags)]]])
        #expect(flagText.unicodeScalars.count <= 280)
        #expect(String(flagText.split(separator: "\n").first ?? "").dropLast().allSatisfy { $0 == "🇫🇷" })
    }

    @Test func bodyAtExactly280ScalarsIsNotCut() {
        // "\nClaude - hapi" is 14 scalars: 266 for the question makes exactly 280.
        let question = String(repeating: "q", count: 266)
        let text = body(["questions": [["question": .string(question)]]])
        #expect(text.unicodeScalars.count == 280)
        #expect(!text.contains("…"))
        let longer = body(["questions": [["question": .string(question + "q")]]])
        #expect(longer.unicodeScalars.count == 280)
        #expect(longer.contains("…"))
    }

    @Test func flattenCollapsesWhitespace() {
        #expect(PushNotificationComposer.flatten("  a \n\t b\r\n c  ") == "a b c")
        #expect(PushNotificationComposer.flatten("\u{00A0}x\u{2028}y") == "x y")
    }
}
