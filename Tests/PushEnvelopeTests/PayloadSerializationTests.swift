import Testing

@testable import PushEnvelope

/// The payload's direct canonical writer (the dispatcher's hot path) against the general
/// serializer it stands in for, and the allocation-free seal against a plain reference.
@Suite struct PayloadSerializationTests {
    static let awkward = [
        "", "plain", "quote \" backslash \\ slash /", "controls \u{0}\u{1}\u{8}\u{9}\u{A}\u{B}\u{C}\u{D}\u{1F}\u{7F}",
        "é e\u{301} ß 漢字", "astral 😀 \u{1F600}\u{E000}", "line\u{2028}para\u{2029}", String(repeating: "long ", count: 300),
    ]

    @Test func directWriterMatchesTheGeneralSerializer() {
        var checked = 0
        for text in Self.awkward {
            for withOptionals in [false, true] {
                let payload = PushNotificationPayload(
                    type: PushNotificationType(rawValue: withOptionals ? "ready" : text), sessionId: text,
                    sessionName: withOptionals ? text : nil, url: withOptionals ? "/sessions/\(text)" : nil,
                    requestId: withOptionals ? text : nil, title: text, body: text + "!", severity: withOptionals ? PushNotificationSeverity(rawValue: text) : nil,
                    contractVersion: text.isEmpty ? "1" : text, notifySummary: withOptionals ? #"{"summary":"\#(text.count)"}"# : nil)
                #expect(payload.canonicalJSON == payload.jsonValue.canonicalBytes)
                checked += 1
            }
        }
        #expect(checked == Self.awkward.count * 2)
    }

    @Test func keyOrderIsTheJavaScriptSortOrder() {
        #expect(PushNotificationPayload.canonicalKeyOrder == PushNotificationPayload.canonicalKeyOrder.sorted(by: CanonicalJSON.jsKeyOrder))
        let every = PushNotificationPayload(
            type: .ready, sessionId: "s", sessionName: "n", url: "/u", requestId: "r", title: "t", body: "b", severity: .info,
            notifySummary: "{}")
        #expect(Set(every.fields.keys) == Set(PushNotificationPayload.canonicalKeyOrder))
    }

    @Test func sealOpensAndMatchesTheByteReference() throws {
        let key = try PushKey.generate()
        for length in [0, 1, 2, 3, 4, 100, 321, 2372] {
            let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let envelope = try PushEnvelopeCipher.seal(plaintext, key: key)
            #expect(envelope.utf8.count == PushEnvelopeCipher.sealedLength(plaintextCount: length))
            #expect(try PushEnvelopeCipher.open(envelope, key: key) == plaintext)
            // The pointer encoder agrees with the array encoder on the same bytes.
            let sealed = try Base64.decode(envelope)
            #expect(String(decoding: Base64.encodeToBytes(sealed), as: UTF8.self) == envelope)
        }
    }
}
