import Testing

import DeviceRegistry
import PushEnvelope
@testable import PushNative
@testable import PushTransports

/// js-hub-behaviour.md §6: the iOS plaintext, the direct-FCM message and the relay body, byte
/// for byte, from payloads composed as the JavaScript hub composes them.
@Suite struct JSHubWireTests {
    static let footer = #"AGENT_NOTIFY_SUMMARY {"version":1,"summary":"ok","status":"done"}"#

    static var ready: PushNotificationPayload {
        PushNotificationComposer.ready(for: HubFixture.session(), messages: [HubFixture.agent(footer)])
    }

    @Test("§6.1 iOS plaintext") func iosPlaintext() throws {
        let plaintext = String(decoding: Self.ready.canonicalJSON, as: UTF8.self)
        #expect(
            plaintext
                == #"{"body":"ok","contractVersion":"1","notifySummary":"{\"version\":1,\"summary\":\"ok\",\"status\":\"done\"}","sessionId":"0123456789abcdef","sessionName":"hapi","severity":"info","title":"Claude - hapi","type":"ready","url":"/sessions/0123456789abcdef"}"#
        )
        // The generic canonicalizer agrees with the payload's own writer.
        #expect(Self.ready.jsonValue.canonicalBytes == Self.ready.canonicalJSON)
        // Its envelope is 376 base64 characters.
        #expect(try PushEnvelopeCipher.seal(Self.ready.canonicalJSON, key: PushKey.generate()).utf8.count == 376)
        #expect(PushEnvelopeCipher.sealedLength(plaintextCount: Self.ready.canonicalJSON.count) == 376)
    }

    @Test("§6.1 sessionName, url and severity are always present") func alwaysPresent() {
        let session = HubFixture.session()
        for payload in [
            PushNotificationComposer.ready(for: session, messages: []), PushNotificationComposer.permissionRequest(for: session),
            PushNotificationComposer.taskNotification(for: session, content: JSHubTaskTests.system("s", nil)),
        ] {
            #expect(payload?.sessionName == "hapi")
            #expect(payload?.url == "/sessions/0123456789abcdef")
            #expect(payload?.severity != nil)
            #expect(payload?.contractVersion == "1")
        }
    }

    @Test("§6.2 direct FCM, wear ready") func fcmWearReady() {
        let body = FCMProvider.body(token: "fcm-wear", payload: Self.ready, highPriority: true, directBootOK: true)
        #expect(
            String(decoding: body, as: UTF8.self)
                == #"{"message":{"token":"fcm-wear","data":{"type":"ready","sessionId":"0123456789abcdef","sessionName":"hapi","url":"/sessions/0123456789abcdef","title":"Claude - hapi","body":"ok","contractVersion":"1","severity":"info","notifySummary":"{\"version\":1,\"summary\":\"ok\",\"status\":\"done\"}"},"android":{"priority":"HIGH","direct_boot_ok":true}}}"#
        )
    }

    @Test("§6.2 direct FCM, phone permission with no request at fire time") func fcmPhonePermission() {
        let payload = PushNotificationComposer.permissionRequest(for: HubFixture.session(requests: [:]))
        let body = FCMProvider.body(token: "fcm-phone", payload: payload, highPriority: true, directBootOK: false)
        #expect(
            String(decoding: body, as: UTF8.self)
                == #"{"message":{"token":"fcm-phone","data":{"type":"permission-request","sessionId":"0123456789abcdef","sessionName":"hapi","url":"/sessions/0123456789abcdef","title":"Permission Request","body":"Claude - hapi\nSession: hapi","contractVersion":"1","severity":"warning"},"android":{"priority":"HIGH"}}}"#
        )
    }

    @Test("§6.2 data order with a request id") func fcmRequestIdOrder() {
        let payload = PushNotificationComposer.permissionRequest(for: HubFixture.session(requests: HubFixture.json(#"{"r1":{"tool":"Bash","arguments":{"command":"ls"}}}"#)))
        let text = String(decoding: FCMProvider.body(token: "t", payload: payload, highPriority: true, directBootOK: false), as: UTF8.self)
        #expect(text.contains(#""contractVersion":"1","requestId":"r1","severity":"warning"}"#))
    }

    /// (status, body, outcome). JavaScript prunes the last row too; we keep the device when
    /// Google does not say the token is the problem (the error may be about our payload).
    @Test(
        "§6.2 answer classification",
        arguments: [
            (404, #"{"error":{"status":"UNREGISTERED"}}"#, PushDeliveryOutcome.invalid),
            (404, #"{"error":{"status":"NOT_FOUND"}}"#, .failed),
            (400, #"{"error":{"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.data.body"}]}]}}"#, .failed),
            (400, #"{"error":{"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token"}]}]}}"#, .invalid),
            (400, #"{"error":{"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"}]}}"#, .failed),
        ])
    func fcmClassification(_ status: Int, _ body: String, _ outcome: PushDeliveryOutcome) {
        #expect(HubAnswerPolicy.outcome(FCMProvider.parse(status: status, body: Array(body.utf8))) == outcome)
    }

    @Test("§6.3 relay body") func relayBody() throws {
        let body = RelayProvider.body(platform: .ios, token: "abcd", envelope: "ZW52", collapseId: "ready-0123456789abcdef", priority: 10)
        #expect(String(decoding: body, as: UTF8.self) == #"{"platform":"ios","token":"abcd","envelope":"ZW52","collapseId":"ready-0123456789abcdef","priority":10}"#)
    }

    @Test("§6.3 APNs body") func apnsBody() {
        #expect(
            String(decoding: APNsProvider.body(envelope: "E"), as: UTF8.self)
                == #"{"aps":{"mutable-content":1,"alert":{"title":"HAPI","body":"New activity"},"sound":"default"},"hapi":{"v":1,"e":"E"}}"#)
    }

    @Test(
        "§6.3 collapse id",
        arguments: [
            ("ready-" + String(repeating: "é", count: 40), "ready-" + String(repeating: "é", count: 29)),
            ("ready-" + String(repeating: "漢", count: 20), "ready-" + String(repeating: "漢", count: 19)),
            ("permission-request-3f2a9c1e-0b5d-4f7a-9e21-6c8d0a1b2c3d", "permission-request-3f2a9c1e-0b5d-4f7a-9e21-6c8d0a1b2c3d"),
        ])
    func collapseId(_ id: String, _ cut: String) {
        #expect(APNsCollapseId.cut(id) == cut)
    }

    @Test("§6.4 no cap in JavaScript; the contract's ladder here (SPEC WINS)") func sizeLadder() throws {
        let long = String(repeating: "漢", count: 400)
        let text = #"AGENT_NOTIFY_SUMMARY {"summary":"\#(long)","action":"\#(long)","status":"\#(long)","agent":"\#(long)","project":"\#(long)"}"#
        let payload = PushNotificationComposer.ready(for: HubFixture.session(), messages: [HubFixture.agent(text)])
        #expect(payload.canonicalJSON.count == 3338)
        #expect(PushEnvelopeCipher.sealedLength(plaintextCount: payload.canonicalJSON.count) == 4488)
        let (fitted, level) = try #require(PayloadFitter.fitEnvelope(payload))
        #expect(level == .withoutSummary)
        #expect(fitted.notifySummary == nil)
        #expect(fitted.body == payload.body)
    }

    @Test("§6.4 the all-ASCII maximum fits whole") func asciiMaximum() throws {
        func text(_ c: String, _ n: Int) -> String { String(repeating: c, count: n) }
        let footer =
            #"AGENT_NOTIFY_SUMMARY {"version":1,"summary":"\#(text("S", 300))","action":"\#(text("A", 300))","status":"\#(text("s", 40))","agent":"\#(text("a", 90))","project":"\#(text("p", 90))"}"#
        let payload = PushNotificationComposer.ready(for: HubFixture.session(), messages: [HubFixture.agent(footer)])
        #expect(payload.canonicalJSON.count == 1324)
        #expect(PushEnvelopeCipher.sealedLength(plaintextCount: 1324) == 1804)
        #expect(PayloadFitter.fitEnvelope(payload)?.1 == .full)
    }
}
