import PushEnvelope
import PushHTTP
import PushLoopbackServer
import PushSync
import PushTestSupport
import PushTransports
import Testing

@testable import PushRelay

/// The official relay's validation matrix: every case with its exact status and code, and
/// nothing forwarded.
@Suite struct RelayPushValidationTests {
    static let cases: [(name: String, body: String, status: Int, code: String)] = [
        ("non-JSON body", "not json{{", 400, "bad_request"),
        ("empty body", "", 400, "bad_request"),
        ("JSON array body", "[1,2]", 400, "bad_request"),
        ("JSON string body", #""ios""#, 400, "bad_request"),
        ("missing platform", #"{"token":"\#(mixedCaseToken)","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("unknown platform", #"{"platform":"web","token":"\#(mixedCaseToken)","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("platform in capitals", #"{"platform":"IOS","token":"\#(mixedCaseToken)","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("missing token", #"{"platform":"ios","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("non-string token", #"{"platform":"ios","token":42,"envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("non-hex token", #"{"platform":"ios","token":"\#(String(repeating: "zz", count: 32))","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("odd-length token", #"{"platform":"ios","token":"\#(String(repeating: "a", count: 63))","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("too-short token", #"{"platform":"ios","token":"\#(String(repeating: "ab", count: 7))","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("too-long token", #"{"platform":"ios","token":"\#(String(repeating: "ab", count: 257))","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("missing envelope", #"{"platform":"ios","token":"\#(mixedCaseToken)"}"#, 400, "bad_request"),
        ("empty envelope", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":""}"#, 400, "bad_request"),
        ("non-string envelope", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":12}"#, 400, "bad_request"),
        ("envelope with invalid base64 characters", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"AB!="}"#, 400, "bad_request"),
        ("envelope with a bad base64 length", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"AAA"}"#, 400, "bad_request"),
        ("envelope of padding only", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"===="}"#, 400, "bad_request"),
        ("url-safe base64 envelope", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"ab-_"}"#, 400, "bad_request"),
        ("oversized envelope (3204 bytes)", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"\#(String(repeating: "A", count: 3204))"}"#, 413, "too_large"),
        ("invalid priority", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"\#(sampleEnvelope)","priority":7}"#, 400, "bad_request"),
        ("string priority", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"\#(sampleEnvelope)","priority":"10"}"#, 400, "bad_request"),
        ("null priority", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"\#(sampleEnvelope)","priority":null}"#, 400, "bad_request"),
        ("non-string collapseId", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"\#(sampleEnvelope)","collapseId":42}"#, 400, "bad_request"),
        ("collapseId with a newline", #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"\#(sampleEnvelope)","collapseId":"a\nb"}"#, 400, "bad_request"),
        ("empty Android token", #"{"platform":"android","token":"","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("Android token over 4096 bytes", #"{"platform":"android","token":"\#(String(repeating: "a", count: 4097))","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("Android token with a space", #"{"platform":"android","token":"token with spaces","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("Android token with a newline", #"{"platform":"android","token":"token\n","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("Android token not ASCII", #"{"platform":"android","token":"tök","envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("numeric Android token", #"{"platform":"android","token":5,"envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
        ("null Android token", #"{"platform":"android","token":null,"envelope":"\#(sampleEnvelope)"}"#, 400, "bad_request"),
    ]

    @Test func everyInvalidBodyIsAnsweredAndNothingIsForwarded() async throws {
        let relay = try RelayFixture()
        var seen: [String] = []
        for entry in Self.cases {
            let response = try await relay.push(entry.body)
            #expect(response.status == entry.status, "\(entry.name)")
            #expect(response.headers.first(name: "content-type") == "application/json", "\(entry.name)")
            let json = try #require(response.json, "\(entry.name)")
            #expect(json["ok"] == false, "\(entry.name)")
            #expect(json["code"]?.stringValue == entry.code, "\(entry.name)")
            // bad_request and too_large carry a short message.
            let message = try #require(json["message"]?.stringValue, "\(entry.name)")
            #expect(!message.isEmpty && message.count < 120, "\(entry.name)")
            seen.append(entry.name)
        }
        await relay.stop()
        #expect(seen.count == Self.cases.count)
        #expect(relay.apnsRequests.isEmpty)
        #expect(relay.providers.fcm.requests.isEmpty)
        // Invalid bodies carry no token hash to log.
        #expect(relay.log.pushLines.isEmpty)
    }

    @Test func anEnvelopeOfExactly3200BytesIsAccepted() async throws {
        let relay = try RelayFixture()
        let response = try await relay.push(iosPush(envelope: String(repeating: "A", count: 3200)))
        let android = try await relay.push(androidPush(envelope: String(repeating: "A", count: 3200)))
        await relay.stop()
        #expect(response.status == 200)
        #expect(response.text == #"{"ok":true}"#)
        #expect(android.status == 200)
        #expect(relay.apnsRequests.count == 1)
        #expect(relay.fcmSends.count == 1)
    }

    @Test func validationIsPure() throws {
        guard case .valid(let push) = RelayPush.validate(Array(#"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"QUJDRA=="}"#.utf8))
        else {
            Issue.record("a valid body was refused")
            return
        }
        #expect(push.token == mixedCaseToken.lowercased())
        #expect(push.priority == 10)
        #expect(push.collapseId == nil)
        // 10.0 is the number 10 in JSON, as in JavaScript.
        guard case .valid(let five) = RelayPush.validate(Array(#"{"platform":"android","token":"Ab","envelope":"QQ==","priority":5.0}"#.utf8))
        else {
            Issue.record("priority 5.0 was refused")
            return
        }
        #expect(five.priority == 5)
        #expect(five.token == "Ab")
        // The last duplicate key wins, as JSON.parse does.
        guard case .valid(let duplicate) = RelayPush.validate(Array(#"{"platform":"web","platform":"android","token":"x","envelope":"QQ=="}"#.utf8))
        else {
            Issue.record("a duplicate key was not resolved like JSON.parse")
            return
        }
        #expect(duplicate.platform == .android)
    }

    @Test func base64ShapeMatchesTheOfficialRelay() {
        for good in ["AAAA", "QQ==", "QUI=", "ab+/", sampleEnvelope] { #expect(RelayPush.isStandardBase64(good), "\(good)") }
        for bad in ["", "A", "AAA", "A===", "====", "AB!=", "ab-_", "AA=A", " AAA", "AAAA\n"] { #expect(!RelayPush.isStandardBase64(bad), "\(bad)") }
    }

    /// The relay cuts with the provider layer's one cut (APNsRulesTests has its edge cases).
    @Test func collapseIdIsCutByTheProviderLayersCut() {
        let id = "ready-" + String(repeating: "😀", count: 20)
        let body = #"{"platform":"ios","token":"\#(mixedCaseToken)","envelope":"QUJDRA==","collapseId":"\#(id)"}"#
        guard case .valid(let push) = RelayPush.validate(Array(body.utf8)) else {
            Issue.record("a valid body was refused")
            return
        }
        #expect(push.collapseId == "ready-" + String(repeating: "😀", count: 14))
    }

    /// The token rule is the provider layer's: 16 and 512 digits pass, 14, 514 and odd lengths do not.
    @Test(arguments: [(16, true), (512, true), (14, false), (15, false), (17, false), (513, false), (514, false)])
    func iosTokenLengthsFollowTheProviderRule(_ digits: Int, _ valid: Bool) {
        let token = String(String(repeating: "0123456789ABCDEF", count: 33).prefix(digits))
        let body = #"{"platform":"ios","token":"\#(token)","envelope":"QUJDRA=="}"#
        if case .valid = RelayPush.validate(Array(body.utf8)) { #expect(valid) } else { #expect(!valid) }
    }

    @Test func deviceKeysArePlatformScoped() {
        let upper = String(repeating: "AB", count: 32)
        #expect(RelayPush.deviceKey(platform: .ios, token: upper) == RelayPush.deviceKey(platform: .ios, token: upper.lowercased()))
        #expect(RelayPush.deviceKey(platform: .android, token: upper) != RelayPush.deviceKey(platform: .android, token: upper.lowercased()))
        #expect(RelayPush.deviceKey(platform: .android, token: upper) != RelayPush.deviceKey(platform: .ios, token: upper))
        #expect(RelayPush.deviceKey(platform: .ios, token: "abcd") == Digest.hex(Digest.sha256(Array("ios:abcd".utf8))))
    }
}
