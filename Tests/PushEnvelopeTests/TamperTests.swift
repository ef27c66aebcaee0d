import Testing

@testable import PushEnvelope

@Suite struct TamperTests {
    let vector: GoldenVector
    let sealed: [UInt8]

    init() throws {
        vector = try GoldenVector.load()
        sealed = try Base64.decode(vector.envelope)
    }

    @Test func wrongKeyFailsAuthentication() throws {
        var bytes = vector.key.rawBytes
        bytes[31] ^= 0x01
        let wrong = try PushKey(bytes: bytes)
        #expect(throws: PushEnvelopeError.authenticationFailed) { try PushEnvelopeCipher.open(vector.envelope, key: wrong) }
    }

    @Test func alteredAADFailsAuthentication() throws {
        let otherAAD = try AESGCM.seal(
            plaintext: Array(vector.plaintext.utf8), key: vector.key.rawBytes, nonce: vector.nonce, aad: Array("hapi-push-v2".utf8))
        #expect(throws: PushEnvelopeError.authenticationFailed) { try PushEnvelopeCipher.open(Base64.encode(otherAAD), key: vector.key) }
        #expect(throws: PushEnvelopeError.authenticationFailed) {
            try AESGCM.open(sealed: sealed, key: vector.key.rawBytes, aad: Array("hapi-push-v2".utf8))
        }
        #expect(throws: PushEnvelopeError.authenticationFailed) {
            try AESGCM.open(sealed: sealed, key: vector.key.rawBytes, aad: [])
        }
    }

    @Test func everyFlippedBitFailsAuthentication() throws {
        // Nonce, ciphertext and tag: any single flipped bit anywhere is refused.
        for byteIndex in sealed.indices {
            for bit in [0, 7] {
                var tampered = sealed
                tampered[byteIndex] ^= UInt8(1 << bit)
                #expect(throws: PushEnvelopeError.authenticationFailed, "byte \(byteIndex) bit \(bit)") {
                    try PushEnvelopeCipher.open(Base64.encode(tampered), key: vector.key)
                }
            }
        }
    }

    @Test func truncationIsRefused() throws {
        // Cut into the tag: authentication fails. Cut below nonce + tag: too short.
        for count in [sealed.count - 1, sealed.count - 16, 28] {
            #expect(throws: PushEnvelopeError.authenticationFailed, "\(count) bytes") {
                try PushEnvelopeCipher.open(Base64.encode(sealed.prefix(count)), key: vector.key)
            }
        }
        for count in [27, 12, 1] {
            #expect(throws: PushEnvelopeError.tooShort, "\(count) bytes") {
                try PushEnvelopeCipher.open(Base64.encode(sealed.prefix(count)), key: vector.key)
            }
        }
    }

    @Test(arguments: [
        "", "AAECAwQF BgcI", "AAECAwQFBgcICQoL\n", "AAECAwQFBgcICQo", "AAECAwQF-_cICQoL", "AAEC=wQF", "AAECAwQFBgcICQoL===",
    ])
    func badBase64IsRefused(_ text: String) throws {
        #expect(throws: PushEnvelopeError.invalidBase64) { try PushEnvelopeCipher.open(text, key: vector.key) }
    }

    @Test func failedOpenReturnsNoPlaintext() throws {
        var tampered = sealed
        tampered[20] ^= 0xFF
        do {
            let plaintext = try AESGCM.open(sealed: tampered, key: vector.key.rawBytes, aad: PushEnvelopeCipher.associatedData)
            Issue.record("tampered envelope opened to \(plaintext.count) bytes")
        } catch {
            #expect(error == .authenticationFailed)
        }
    }
}

@Suite struct ReceivedPushTests {
    @Test func unknownVersionIsDropped() throws {
        let vector = try GoldenVector.load()
        for version in ["2", "0", "", "v1"] as [String?] + [nil] {
            #expect(throws: PushEnvelopeError.unsupportedVersion) {
                try ReceivedPush.decode(version: version, envelope: vector.envelope, key: vector.key)
            }
        }
    }

    @Test func missingKeyOrEnvelopeIsDropped() throws {
        let vector = try GoldenVector.load()
        #expect(throws: PushEnvelopeError.missingKey) { try ReceivedPush.decode(version: "1", envelope: vector.envelope, key: nil) }
        #expect(throws: PushEnvelopeError.missingEnvelope) { try ReceivedPush.decode(version: "1", envelope: nil, key: vector.key) }
        #expect(throws: PushEnvelopeError.missingEnvelope) { try ReceivedPush.decode(version: "1", envelope: "", key: vector.key) }
    }

    @Test(arguments: [
        "not json", "[1,2]", "{\"type\":\"ready\"}", "{\"type\":1,\"sessionId\":\"s\",\"title\":\"t\",\"body\":\"b\",\"contractVersion\":\"1\"}",
        "{\"type\":\"ready\",\"sessionId\":\"s\",\"title\":\"t\",\"body\":\"b\",\"contractVersion\":\"1\",\"url\":null}",
    ])
    func malformedPayloadIsDropped(_ plaintext: String) throws {
        let key = try PushKey.generate()
        let envelope = try PushEnvelopeCipher.seal(Array(plaintext.utf8), key: key)
        #expect(throws: PushEnvelopeError.malformedPayload) { try ReceivedPush.decode(version: "1", envelope: envelope, key: key) }
    }

    @Test func fullPayloadRoundTrips() throws {
        let key = try PushKey.generate()
        let payload = PushNotificationPayload(
            type: .permissionRequest, sessionId: "abc", sessionName: "claude - hapi", url: "/sessions/abc", requestId: "r-1",
            title: "Permission", body: "Run `rm -rf build`?", severity: .warning, notifySummary: "{\"a\":1}")
        let envelope = try PushEnvelopeCipher.seal(payload.canonicalJSON, key: key)
        #expect(try ReceivedPush.decode(version: "1", envelope: envelope, key: key) == payload)
    }
}
