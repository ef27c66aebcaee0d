import Testing

import PushTransports
import DeviceRegistry
import PushEnvelope
@testable import PushNative

/// The seed contract's question preview (an `input-request`), which the JavaScript hub's
/// composer sends for a question tool's pending request: counted in Unicode code points (the
/// contract's rule), cut between grapheme clusters.
@Suite struct NotificationComposerTests {
    /// A session named `hapi` (agent Claude) waiting on one request.
    func session(name: String = "hapi", tool: String = "AskUserQuestion", requestId: String = "r", arguments: JSONValue?) -> PushSession {
        var request: [(key: String, value: JSONValue)] = [(key: "tool", value: .string(tool))]
        if let arguments { request.append((key: "arguments", value: arguments)) }
        return PushSession(
            id: "abc", metadata: ["flavor": "claude", "name": .string(name)],
            agentState: ["requests": .object([(key: requestId, value: .object(request))])])
    }

    func inputRequest(_ tool: String, arguments: JSONValue?) -> PushNotificationPayload? {
        let payload = PushNotificationComposer.pendingRequest(for: session(tool: tool, arguments: arguments))
        return payload?.type == .inputRequest ? payload : nil
    }

    @Test(arguments: [
        "request_user_input", "AskUserQuestion", "ask_user_question", "CursorAskQuestion", "functions.request_user_input",
        "functions.AskUserQuestion",
    ])
    func questionToolsAreQuestions(_ name: String) {
        #expect(PushNotificationComposer.isQuestionTool(name))
        #expect(inputRequest(name, arguments: ["questions": [["question": "Q?"]]]) != nil)
    }

    @Test(arguments: ["ExitPlanMode", "Bash", "mcp__server__AskUserQuestion", "mcp__x__ask_user_question", "functions.ExitPlanMode", "askuserquestion", ""])
    func otherToolsAreNotQuestions(_ name: String) {
        #expect(!PushNotificationComposer.isQuestionTool(name))
        #expect(inputRequest(name, arguments: ["questions": [["question": "Q?"]]]) == nil)
    }

    func body(_ arguments: JSONValue?, name: String = "hapi") -> String {
        let payload = PushNotificationComposer.pendingRequest(for: session(name: name, arguments: arguments))
        return payload?.type == .inputRequest ? payload?.body ?? "<nil>" : "<nil>"
    }

    @Test func bodyShowsFirstQuestionCountAndSession() throws {
        let payload = try #require(
            PushNotificationComposer.pendingRequest(
                for: session(
                    requestId: "r-9",
                    arguments: [
                        "questions": [
                            ["question": "Which   database\nshould we use?", "header": "DB", "options": [["label": "Postgres"], ["label": "SQLite"]]],
                            ["question": "", "header": "Auth"], ["question": "   ", "header": ""], ["question": "Deploy now?"],
                        ]
                    ])))
        #expect(payload.type == .inputRequest)
        #expect(payload.title == "Claude needs your input")
        #expect(payload.severity == .info)
        #expect(payload.requestId == "r-9")
        #expect(payload.body == "Which database should we use?\n+2 more questions\nhapi")
        #expect(!payload.body.contains("Postgres"))
        #expect(body(["questions": [["question": "One?"], ["question": "Two?"]]]) == "One?\n+1 more question\nhapi")
        #expect(body(["questions": [["question": "", "header": "Header only"]]]) == "Header only\nhapi")
        #expect(body(["question": "Codex style?"]) == "Codex style?\nhapi")
    }

    @Test(arguments: [
        nil, JSONValue.null, "text", ["questions": "not a list"], ["questions": []], ["questions": [1, 2]], ["questions": [["question": "", "header": " "]]],
        ["other": 1],
    ] as [JSONValue?])
    func malformedInputFallsBack(_ arguments: JSONValue?) {
        #expect(body(arguments) == "Open the session to view and answer the question")
    }

    @Test func sessionNameIsCappedAt80ScalarsAtGraphemeBoundaries() {
        // 74 ASCII + a family emoji (7 scalars): the emoji cannot fit with the ellipsis, so it goes whole.
        let family = "👨‍👩‍👧‍👦"
        let longProject = String(repeating: "p", count: 74) + family + "tail"
        let text = body(["questions": [["question": "Q?"]]], name: longProject)
        let shownName = String(text.split(separator: "\n").last ?? "")
        #expect(longProject.unicodeScalars.count > 80)
        #expect(shownName.unicodeScalars.count <= 80)
        #expect(shownName.hasSuffix("…"))
        #expect(!shownName.contains("\u{200D}"))  // no half family
        // Exactly 80 scalars passes untouched.
        let exact = String(repeating: "x", count: 80)
        let exactText = body(["questions": [["question": "Q?"]]], name: exact)
        #expect(exactText.hasSuffix("\n" + exact))
        let over = body(["questions": [["question": "Q?"]]], name: exact + "y")
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
        // "\nhapi" is 5 scalars: 275 for the question makes exactly 280.
        let question = String(repeating: "q", count: 275)
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
