import PushEcosystemStandIns
import enum PushEnvelope.ReceivedPush  // the device side: its own product, not re-exported by PushNative
import PushNative
import Testing

/// A hub imports `PushNative` beside AsyncHTTPClient, NIO, swift-crypto and its own helpers.
/// This file compiles only if every one of their generic names stays unambiguous: `PushNative`
/// exports push-named types and nothing else (its HTTP client, JSON, base64, digests and locks
/// are `package`), and no exported type shares its module's name.
@Suite struct NameCollisionTests {
    @Test func ecosystemNamesStayUnqualifiedBesidePushNative() async throws {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        let client = HTTPClient()
        let status = try await client.execute(method: "POST", url: "https://hub.example/api", headers: headers)
        await #expect(throws: HTTPClientError.deadlineExceeded) {
            _ = try await client.execute(method: "GET", url: "http://plain", headers: HTTPHeaders())
        }
        let digest: any Digest = StandInSHA256Digest(bytes: [1, 2, 3])
        let encoded = Base64.encode(digest.bytes)
        let value: JSONValue = JSONParser.parse("null")
        let lock = Locked(JSONValue.array([value]))

        #expect(status == 200)
        #expect(headers["content-type"] == ["application/json"])
        #expect(encoded == "stand-in:3")
        #expect(lock.get() == .array([.null]))

        // ... and ours, unqualified beside them.
        let payload = PushNotificationPayload(type: .ready, sessionId: "s1", title: "HAPI", body: "Ready for input")
        let key = try PushKey(bytes: Array(0..<32))
        let envelope = try PushEnvelopeCipher.seal(payload.canonicalJSON, key: key)
        let opened = try ReceivedPush.decode(version: "1", envelope: envelope, key: key)
        let session: PushJSONValue = ["name": "hapi", "flavor": "claude"]
        let registry = PushDeviceRegistry(store: InMemoryPushDeviceStore())
        let answer = await registry.handleRegister(
            namespace: "default", body: Array(#"{"platform":"wear","deviceId":"w","token":"t"}"#.utf8))
        #expect(opened == payload)
        #expect(session["name"] == "hapi")
        #expect(answer == .ok)
    }
}
