import Testing

@testable import PushEnvelope

@Suite struct NonceTests {
    @Test func everySealUsesAFreshNonce() throws {
        let key = try PushKey.generate()
        let plaintext = Array("{\"type\":\"ready\"}".utf8)
        var nonces = Set<[UInt8]>()
        let count = 20_000
        for _ in 0..<count {
            let sealed = try Base64.decode(try PushEnvelopeCipher.seal(plaintext, key: key))
            nonces.insert(Array(sealed.prefix(12)))
        }
        #expect(nonces.count == count)
    }

    @Test func fixedNonceMustBe12Bytes() throws {
        let key = try PushKey.generate()
        #expect(throws: PushEnvelopeError.invalidNonce) { try PushEnvelopeCipher.seal([1], key: key, testVectorNonce: [UInt8](repeating: 0, count: 11)) }
        #expect(throws: PushEnvelopeError.invalidNonce) { try PushEnvelopeCipher.seal([1], key: key, testVectorNonce: [UInt8](repeating: 0, count: 13)) }
    }

    @Test func emptyPlaintextRoundTrips() throws {
        let key = try PushKey.generate()
        let envelope = try PushEnvelopeCipher.seal([], key: key)
        #expect(envelope.utf8.count == PushEnvelopeCipher.sealedLength(plaintextCount: 0))
        #expect(try PushEnvelopeCipher.open(envelope, key: key) == [])
    }
}
