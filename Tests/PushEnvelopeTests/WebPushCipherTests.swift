import Testing

@testable import PushEnvelope

/// RFC 8291 §5 / Appendix A: the worked example, byte for byte, with its fixed key and salt.
@Suite struct WebPushCipherTests {
    static let plaintext = "When I grow up, I want to be a watermelon"
    static let userAgentPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let authSecret = "BTBZMqHH6r4Tts7J_aSIgg"
    static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    static let senderPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
    static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
    static let body =
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    static func decode(_ text: String) throws -> [UInt8] { try #require(Base64.urlDecode(text)) }

    @Test func reproducesRFC8291ExampleByteForByte() throws {
        let sender = try #require(
            WebPushP256Key.keyPair(privateScalar: Self.decode(Self.senderPrivate), publicKey: Self.decode(Self.senderPublic)))
        let sealed = try WebPushCipher.seal(
            plaintext: Array(Self.plaintext.utf8), subscriptionKey: Self.decode(Self.userAgentPublic), authSecret: Self.decode(Self.authSecret),
            ephemeralKey: sender, salt: Self.decode(Self.salt))
        #expect(Base64.urlEncodeUnpadded(sealed) == Self.body)
    }

    @Test func everyMessageHasAFreshKeyAndSalt() throws {
        let key = try Self.decode(Self.userAgentPublic)
        let auth = try Self.decode(Self.authSecret)
        let first = try WebPushCipher.seal(plaintext: Array("x".utf8), subscriptionKey: key, authSecret: auth)
        let second = try WebPushCipher.seal(plaintext: Array("x".utf8), subscriptionKey: key, authSecret: auth)
        #expect(first.count == 86 + 1 + 1 + 16)
        #expect(first[0..<16] != second[0..<16])  // salt
        #expect(first[21..<86] != second[21..<86])  // ephemeral public key
        #expect(Array(first[16..<21]) == [0, 0, 0x10, 0, 65])
    }

    @Test func refusesAMessageOverTheInteroperableLimit() throws {
        let key = try Self.decode(Self.userAgentPublic)
        let auth = try Self.decode(Self.authSecret)
        let fits = try WebPushCipher.seal(plaintext: [UInt8](repeating: 0x41, count: 3993), subscriptionKey: key, authSecret: auth)
        #expect(fits.count == 4096)
        #expect(throws: WebPushCryptoError.tooLarge) {
            try WebPushCipher.seal(plaintext: [UInt8](repeating: 0x41, count: 3994), subscriptionKey: key, authSecret: auth)
        }
    }

    @Test func refusesKeysOffTheCurveOrOfTheWrongShape() throws {
        var point = try Self.decode(Self.userAgentPublic)
        #expect(WebPushP256Key.isValidPublicKey(point))
        point[64] ^= 1  // Y no longer matches X: not on P-256
        #expect(!WebPushP256Key.isValidPublicKey(point))
        #expect(!WebPushP256Key.isValidPublicKey(Array(try Self.decode(Self.userAgentPublic).prefix(33))))
        var compressedTag = try Self.decode(Self.userAgentPublic)
        compressedTag[0] = 0x02
        #expect(!WebPushP256Key.isValidPublicKey(compressedTag))
        #expect(!WebPushP256Key.isValidPublicKey([UInt8](repeating: 0, count: 65)))
        #expect(throws: WebPushCryptoError.invalidAuthSecret) {
            try WebPushCipher.seal(plaintext: [1], subscriptionKey: try Self.decode(Self.userAgentPublic), authSecret: [1, 2, 3])
        }
    }

    @Test func aKeyPairMustBelongTogether() throws {
        let generated = try WebPushP256Key.generate()
        let scalar = try #require(generated.privateScalar())
        #expect(WebPushP256Key.keyPair(privateScalar: scalar, publicKey: generated.publicKey) != nil)
        #expect(WebPushP256Key.keyPair(privateScalar: scalar, publicKey: try Self.decode(Self.senderPublic)) == nil)
        #expect(!"\(generated)".contains(Base64.urlEncodeUnpadded(scalar)))
    }

    @Test func urlSafeBase64DecodesWithOrWithoutPadding() {
        #expect(Base64.urlDecode("BTBZMqHH6r4Tts7J_aSIgg")?.count == 16)
        #expect(Base64.urlDecode("BTBZMqHH6r4Tts7J_aSIgg==")?.count == 16)
        #expect(Base64.urlDecode("BTBZMqHH6r4Tts7J/aSIgg") == nil)
        #expect(Base64.urlDecode("") == nil)
        #expect(Base64.urlDecode("A") == nil)
    }
}
