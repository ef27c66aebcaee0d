import Testing

import PushEnvelope
@testable import PushNative

/// Issue 21, "the last differences from the JavaScript hub": a tool argument of another JSON
/// type is coerced as JavaScript's `String(value)`, and `Edit`'s empty `file_path` shows empty.
@Suite struct JSHubToolCoercionTests {
    static let cases: [(String, String)] = [
        (
            #"{"r1":{"tool":"Edit","arguments":{"file_path":"a/b","old_string":5,"new_string":true}}}"#,
            "Claude Edit: a/b\nSession: hapi\nFile: a/b\nOld: \"5\"\nNew: \"true\""
        ),
        (
            #"{"r1":{"tool":"Edit","arguments":{"file_path":"a/b","old_string":{"k":1},"new_string":[1,2]}}}"#,
            "Claude Edit: a/b\nSession: hapi\nFile: a/b\nOld: \"[object Object]\"\nNew: \"1,2\""
        ),
        (#"{"r1":{"tool":"Write","arguments":{"file_path":"a/b","content":12345}}}"#, "Claude Write: a/b\nSession: hapi\nFile: a/b (5 chars)"),
        (#"{"r1":{"tool":"Write","arguments":{"file_path":"a/b","content":{"k":"v"}}}}"#, "Claude Write: a/b\nSession: hapi\nFile: a/b (15 chars)"),
        (#"{"r1":{"tool":"Write","arguments":{"file_path":"a/b","content":[1,[2,3]]}}}"#, "Claude Write: a/b\nSession: hapi\nFile: a/b (5 chars)"),
        (#"{"r1":{"tool":"TodoWrite","arguments":{"todos":"abc"}}}"#, "Claude TodoWrite: 3 items\nSession: hapi\nUpdating 3 todo items"),
        (#"{"r1":{"tool":"TodoWrite","arguments":{"todos":{"length":7}}}}"#, "Claude TodoWrite: 7 items\nSession: hapi\nUpdating 7 todo items"),
        (#"{"r1":{"tool":"Edit","arguments":{"file_path":"","path":"p/q"}}}"#, "Claude Edit\nSession: hapi\nFile: "),
    ]

    @Test(arguments: cases.indices) func coercedAsJavaScriptDoes(_ index: Int) {
        let (requests, body) = Self.cases[index]
        let payload = PushNotificationComposer.permissionRequest(for: HubFixture.session(requests: HubFixture.json(requests)))
        #expect(payload.body == body)
    }

    @Test func javaScriptStringOfEachType() {
        #expect(HubText.javaScriptString(["a": 1]) == "[object Object]")
        #expect(HubText.javaScriptString([1, [2, 3], .null, "x"]) == "1,2,3,,x")
        #expect(HubText.javaScriptString(.double(1.5)) == "1.5")
        #expect(HubText.javaScriptString(.double(.infinity)) == "Infinity")
        #expect(HubText.javaScriptString(false) == "false")
    }
}

/// web-push.md §3: the Web Push payloads byte for byte (JSON.stringify order).
@Suite struct WebPushPayloadTests {
    @Test func ready() {
        #expect(
            PushNotificationComposer.webReady(for: HubFixture.session()).json
                == #"{"title":"Ready for input","body":"Claude is waiting in hapi","tag":"ready-0123456789abcdef","data":{"type":"ready","sessionId":"0123456789abcdef","url":"/sessions/0123456789abcdef"}}"#
        )
    }

    @Test func permissionWithAndWithoutATool() {
        let edit = HubFixture.session(requests: HubFixture.json(#"{"req-9":{"tool":"Edit","arguments":{}},"r2":{"tool":"Bash"}}"#))
        #expect(
            PushNotificationComposer.webPendingRequest(for: edit).json
                == #"{"title":"Permission Request","body":"hapi (Edit)","tag":"permission-0123456789abcdef","data":{"type":"permission-request","sessionId":"0123456789abcdef","url":"/sessions/0123456789abcdef","requestId":"req-9"}}"#
        )
        let none = HubFixture.session(requests: HubFixture.json("{}"))
        #expect(
            PushNotificationComposer.webPendingRequest(for: none).json
                == #"{"title":"Permission Request","body":"hapi","tag":"permission-0123456789abcdef","data":{"type":"permission-request","sessionId":"0123456789abcdef","url":"/sessions/0123456789abcdef"}}"#
        )
        let emptyTool = HubFixture.session(requests: HubFixture.json(#"{"r1":{"tool":""}}"#))
        #expect(PushNotificationComposer.webPendingRequest(for: emptyTool).body == "hapi")
        // Index keys enumerate first, as Object.keys does.
        let indexed = HubFixture.session(requests: HubFixture.json(#"{"b":{"tool":"Read"},"7":{"tool":"Bash"}}"#))
        #expect(PushNotificationComposer.webPendingRequest(for: indexed).requestId == "7")
    }

    @Test func inputRequestForAQuestionTool() {
        let session = HubFixture.session(
            requests: HubFixture.json(#"{"r1":{"tool":"AskUserQuestion","arguments":{"questions":[{"question":"Which?","options":[]}]}}}"#))
        #expect(
            PushNotificationComposer.webPendingRequest(for: session).json
                == #"{"title":"Claude needs your input","body":"Which?\nhapi","tag":"input-request-0123456789abcdef","data":{"type":"input-request","sessionId":"0123456789abcdef","url":"/sessions/0123456789abcdef","requestId":"r1"}}"#
        )
    }

    @Test func taskCompletedAndFailed() {
        let session = HubFixture.session()
        #expect(
            PushNotificationComposer.webTaskNotification(for: session, content: JSHubTaskTests.system("Built it", "completed"))?.json
                == #"{"title":"Task completed","body":"Claude · hapi · Built it","data":{"type":"task-notification","sessionId":"0123456789abcdef","url":"/sessions/0123456789abcdef"}}"#
        )
        #expect(PushNotificationComposer.webTaskNotification(for: session, content: JSHubTaskTests.system("x", " Killed "))?.title == "Task failed")
        #expect(PushNotificationComposer.webTaskNotification(for: session, content: HubFixture.user("hi")) == nil)
    }
}

/// Issue 27 item 7: the three differences from the JavaScript hub found by running its own code
/// on generated events.
@Suite struct JSHubIssue27DifferencesTests {
    /// `Object.entries(requests)[0]` gives the key `""`, and `JSON.stringify` keeps it.
    @Test func anEmptyRequestIdIsKeptInTheWebPushPayload() {
        let permission = HubFixture.session(requests: HubFixture.json(#"{"":{"tool":"Bash","arguments":{"command":"ls"}}}"#))
        let payload = PushNotificationComposer.webPendingRequest(for: permission)
        #expect(payload.requestId == "")
        #expect(
            payload.json
                == #"{"title":"Permission Request","body":"hapi (Bash)","tag":"permission-0123456789abcdef","data":{"type":"permission-request","sessionId":"0123456789abcdef","url":"/sessions/0123456789abcdef","requestId":""}}"#
        )
        let question = HubFixture.session(
            requests: HubFixture.json(#"{"":{"tool":"AskUserQuestion","arguments":{"questions":[{"question":"Which?","options":[]}]}}}"#))
        #expect(PushNotificationComposer.webPendingRequest(for: question).json.hasSuffix(#","requestId":""}}"#))
        // The native payload still sends a requestId only when it is truthy (js-hub-behaviour.md §6).
        #expect(PushNotificationComposer.permissionRequest(for: permission).requestId == nil)
    }

    /// `extractTaskNotificationFromSystemOutput` trims the summary, so the Web Push body does too.
    @Test func aSystemTaskSummaryIsTrimmedInTheWebPushBody() {
        let content = JSHubTaskTests.system("\n  Built it \u{A0}\t", "completed")
        let payload = PushNotificationComposer.webTaskNotification(for: HubFixture.session(), content: content)
        #expect(payload?.body == "Claude · hapi · Built it")
        #expect(HubMessageContent.taskNotification(in: content)?.summary == "Built it")
    }

    /// `file_path ?? path ?? "unknown"`: a present falsy file is shown empty, only an absent one
    /// reads `unknown`.
    @Test(arguments: [
        (#"{"r1":{"tool":"Write","arguments":{"path":""}}}"#, "Claude Write\nSession: hapi\nFile: "),
        (#"{"r1":{"tool":"Write","arguments":{"path":"","content":"abc"}}}"#, "Claude Write\nSession: hapi\nFile:  (3 chars)"),
        (#"{"r1":{"tool":"Write","arguments":{"file_path":"","path":"p/q"}}}"#, "Claude Write\nSession: hapi\nFile: "),
        (#"{"r1":{"tool":"Write","arguments":{"file_path":null,"path":null}}}"#, "Claude Write\nSession: hapi\nFile: unknown"),
        (#"{"r1":{"tool":"Write","arguments":{}}}"#, "Claude Write\nSession: hapi\nFile: unknown"),
        (#"{"r1":{"tool":"Read","arguments":{"path":""}}}"#, "Claude Read\nSession: hapi\nFile: "),
        (#"{"r1":{"tool":"Read","arguments":{"file_path":false}}}"#, "Claude Read\nSession: hapi\nFile: "),
        (#"{"r1":{"tool":"Edit","arguments":{"path":0}}}"#, "Claude Edit\nSession: hapi\nFile: "),
        (#"{"r1":{"tool":"Edit","arguments":{"path":null}}}"#, "Claude Edit\nSession: hapi\nFile: unknown"),
    ])
    func aPresentEmptyFileIsShownEmpty(_ requests: String, _ body: String) {
        let payload = PushNotificationComposer.permissionRequest(for: HubFixture.session(requests: HubFixture.json(requests)))
        #expect(payload.body == body)
    }
}
