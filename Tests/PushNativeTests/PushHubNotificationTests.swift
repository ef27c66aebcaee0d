import Foundation
import PushEnvelope
import PushLoopbackServer
import PushTestSupport
import Testing

@testable import PushNative

/// Issue 27 item 5: one composition for both channels. Each event gives the native and the Web
/// Push payload from the same decisions, and one `send` delivers it (Web Push when no native
/// device got it).
@Suite struct PushHubNotificationTests {
    static let session = PushSession(id: "s1", metadata: ["flavor": "claude", "name": "hapi"])

    static func session(requests: PushJSONValue) -> PushSession {
        PushSession(id: "s2", metadata: ["flavor": "codex", "name": "repo"], agentState: ["requests": requests])
    }

    @Test func readyGivesBothChannelsTheirReadyPayload() throws {
        let messages: [PushJSONValue] = []
        let composed = try #require(PushNotificationComposer.compose(.ready(Self.session, messages: messages)))
        #expect(composed.payload == PushNotificationComposer.ready(for: Self.session, messages: messages))
        #expect(composed.webPayload == PushNotificationComposer.webReady(for: Self.session))
        #expect(composed.payload.type == .ready && composed.webPayload.type == "ready")
    }

    @Test func aQuestionToolIsAnInputRequestOnBothChannels() throws {
        let session = Self.session(requests: [
            "r1": ["tool": "AskUserQuestion", "arguments": ["questions": [["question": "Ship it?"]]]]
        ])
        let composed = try #require(PushNotificationComposer.compose(.pendingRequest(session)))
        #expect(composed.payload.type == .inputRequest)
        #expect(composed.webPayload.type == "input-request")
        #expect(composed.payload.body == composed.webPayload.body)
        #expect(composed.payload.requestId == "r1" && composed.webPayload.requestId == "r1")
    }

    @Test func anotherToolIsAPermissionRequestOnBothChannels() throws {
        let session = Self.session(requests: ["r1": ["tool": "Bash", "arguments": ["command": "ls"]]])
        let composed = try #require(PushNotificationComposer.compose(.pendingRequest(session)))
        #expect(composed.payload.type == .permissionRequest)
        #expect(composed.webPayload.type == "permission-request")
    }

    @Test func nothingPendingIsNoNotificationOnEitherChannel() {
        #expect(PushNotificationComposer.compose(.pendingRequest(Self.session)) == nil)
    }

    @Test(arguments: [("failed", true), (" Killed ", true), ("ABORTED", true), ("error", true), ("completed", false), ("", false)])
    func aTaskStatusIsReadOnceForBothChannels(status: String, failed: Bool) throws {
        let content: PushJSONValue = [
            "role": "agent",
            "content": ["type": "event", "data": ["type": "message", "message": "x"]],
        ]
        let task = Self.taskContent(status: status)
        #expect(PushNotificationComposer.compose(.taskNotification(Self.session, content: content)) == nil)
        let composed = try #require(PushNotificationComposer.compose(.taskNotification(Self.session, content: task)))
        #expect(composed.payload.title == (failed ? "Task failed" : "Task completed"))
        #expect(composed.webPayload.title == composed.payload.title)
        #expect(composed.payload.severity == (failed ? .error : .success))
    }

    /// A `message-received` content carrying a system task notification (js-hub-behaviour.md §1.7).
    static func taskContent(status: String) -> PushJSONValue {
        ["content": ["type": "output", "data": ["type": "system", "subtype": "task_notification", "summary": "Built it", "status": .string(status)]]]
    }

    @Test func oneSendDeliversTheComposedNotificationOverWebPushWhenNoNativeDeviceGotIt() async throws {
        let recorded = RecordedRequests()
        let server = try LoopbackServer { request in
            recorded.append(request)
            return .init(status: 201)
        }
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-hubnotification-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let push = try await NativePush.start(
            environment: [
                "HAPI_HOME": directory, "HAPI_PUSH_CA_FILE": server.caCertificatePath ?? "", "HAPI_PUSH_RELAY_URL": server.baseURL,
                "HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS": "1",
            ], dataDirectory: directory)
        let browser = try #require(WebPushTestBrowser())
        let routes = try #require(push.webPush)
        let answer = await routes.subscribe(
            namespace: "ns", body: Array(browser.subscribeBody(endpoint: server.localhostBaseURL + "/wpush/one").utf8))
        #expect(answer.status == 200)
        let report = try #require(try await push.send(PushHubEvent.ready(Self.session, messages: []), namespace: "ns"))
        #expect(report.webPush.decision == .sent)
        let request = try #require(recorded.all.first)
        let plaintext = try #require(browser.decrypt(request.body))
        #expect(String(decoding: plaintext, as: UTF8.self) == PushNotificationComposer.webReady(for: Self.session).json)
        // An event that calls for nothing sends nothing.
        #expect(try await push.send(PushHubEvent.pendingRequest(Self.session), namespace: "ns") == nil)
        #expect(recorded.all.count == 1)
        await push.shutdown()
    }
}
