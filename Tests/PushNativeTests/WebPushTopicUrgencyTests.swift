import Foundation
import PushEnvelope
import PushLoopbackServer
import PushProviders
import PushTestSupport
import Testing

@testable import PushNative

/// Issue 28 item 5: RFC 8030 `Topic` from the tag and `Urgency` by type, which the JavaScript
/// hub never sends (docs/wire.md), and `HAPI_WEB_PUSH_TOPIC_URGENCY=off` for its request.
@Suite(.serialized) struct WebPushTopicUrgencyTests {
    static let base64URL = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    @Test func aShortTagIsItsOwnTopicALongOneIsHashed() {
        #expect(WebPushProvider.topic(forTag: "ready-s1") == "ready-s1")
        let exactly32 = String(repeating: "a", count: 32)
        #expect(WebPushProvider.topic(forTag: exactly32) == exactly32)
        let session = "0d5c1a9e-5f7e-4d8b-9a55-3f1f7d2c8b11"
        for tag in ["ready-\(session)", "permission-\(session)", String(repeating: "a", count: 33), "a.b", "é", ""] {
            let topic = WebPushProvider.topic(forTag: tag)
            #expect(topic.count == 32, "\(tag)")
            #expect(topic.allSatisfy { Self.base64URL.contains($0) }, "\(tag)")
            #expect(WebPushProvider.topic(forTag: tag) == topic)
            #expect(topic == String(Base64.urlEncodeUnpadded(Digest.sha256(Array(tag.utf8))).prefix(32)))
        }
        #expect(WebPushProvider.topic(forTag: "ready-\(session)") != WebPushProvider.topic(forTag: "permission-\(session)"))
    }

    @Test func urgencyIsHighOnlyForWhatWaitsOnTheOperator() {
        #expect(WebPushProvider.urgency(forType: "permission-request") == "high")
        #expect(WebPushProvider.urgency(forType: "input-request") == "high")
        #expect(WebPushProvider.urgency(forType: "ready") == "normal")
        #expect(WebPushProvider.urgency(forType: "task-notification") == "normal")
        let none = WebPushProvider.request(pathAndQuery: "/p", sealedBody: [1], authorization: "vapid t=x, k=y")
        #expect(!none.headers.contains { $0.name == "topic" || $0.name == "urgency" })
    }

    struct Sent {
        let topic: String?
        let urgency: String?
    }

    /// One message of each kind to a stand-in push service; what it received.
    static func send(extra: [String: String] = [:]) async throws -> [Sent] {
        let recorded = RecordedRequests()
        let server = try LoopbackServer { request in
            recorded.append(request)
            return .init(status: 201)
        }
        defer { server.stop() }
        let hub = try await WebPushDeliveryTests.Hub(server: server, extra: extra)
        let browser = try #require(WebPushTestBrowser())
        try await hub.subscribe(browser, endpoint: server.baseURL + "/push/1")
        var session = PushSession(id: "s1", metadata: ["flavor": "claude", "name": "hapi"])
        session.agentState = ["requests": ["r1": ["tool": "Bash"]]]
        let task = try #require(
            PushNotificationComposer.webTaskNotification(
                for: session, content: ["type": "output", "data": ["type": "system", "subtype": "task_notification", "summary": "done", "status": "completed"]]))
        let payloads = [PushNotificationComposer.webReady(for: session), PushNotificationComposer.webPendingRequest(for: session), task]
        for payload in payloads {
            let report = try await hub.push.sendWebPush(payload, namespace: "ns", nativeSent: false)
            #expect(report.deliveries.map(\.outcome) == [.sent])
        }
        await hub.push.shutdown()
        #expect(recorded.all.count == payloads.count)
        for (request, payload) in zip(recorded.all, payloads) {
            #expect(browser.decrypt(request.body) == Array(payload.json.utf8))
        }
        return recorded.all.map { Sent(topic: $0.header("topic"), urgency: $0.header("urgency")) }
    }

    @Test func eachKindCarriesItsTopicAndUrgency() async throws {
        let sent = try await Self.send()
        #expect(sent.map(\.topic) == ["ready-s1", "permission-s1", nil])
        #expect(sent.map(\.urgency) == ["normal", "high", "normal"])
    }

    @Test func offSendsTheJavaScriptHubsRequest() async throws {
        let sent = try await Self.send(extra: ["HAPI_WEB_PUSH_TOPIC_URGENCY": "off"])
        #expect(sent.allSatisfy { $0.topic == nil && $0.urgency == nil })
    }

    @Test func theSettingIsReadFromSettingsJSONAndReported() throws {
        var diagnostics: [PushConfiguration.Diagnostic] = []
        for (value, expected) in [("off", false), ("OFF", false), ("0", false), ("on", true), (nil, true)] as [(String?, Bool)] {
            let settings = PushWebPushSettings.resolve(
                mode: "auto", allowPrivate: nil, topicUrgency: value, subject: nil, stored: nil, diagnostics: &diagnostics)
            #expect(settings.sendsTopicAndUrgency == expected, "\(value ?? "unset")")
            #expect(settings.jsonValue["topicUrgency"] == .bool(expected))
        }
        #expect(diagnostics.isEmpty)
        let odd = PushWebPushSettings.resolve(mode: "auto", allowPrivate: nil, topicUrgency: "maybe", subject: nil, stored: nil, diagnostics: &diagnostics)
        #expect(odd.sendsTopicAndUrgency && diagnostics.map(\.setting) == ["webPushTopicUrgency"])
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-topic-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(#"{"webPushTopicUrgency":false}"#.utf8).write(to: URL(fileURLWithPath: directory + "/settings.json"))
        let loaded = try PushConfiguration.load(environment: ["HAPI_HOME": directory], dataDirectory: directory, persist: false)
        #expect(!loaded.webPush.sendsTopicAndUrgency)
    }
}
