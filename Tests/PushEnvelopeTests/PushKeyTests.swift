import Testing

@testable import PushEnvelope

@Suite struct PushKeyTests {
    let valid = Base64.encode([UInt8](0..<32))

    @Test func acceptsExactly32Bytes() throws {
        let key = try PushKey(base64: valid)
        #expect(key.rawBytes == Array(0..<32))
        #expect(key.base64 == valid)
    }

    @Test func rejects31And33Bytes() {
        #expect(throws: PushKeyError.wrongLength(31)) { try PushKey(base64: Base64.encode([UInt8](repeating: 7, count: 31))) }
        #expect(throws: PushKeyError.wrongLength(33)) { try PushKey(base64: Base64.encode([UInt8](repeating: 7, count: 33))) }
        #expect(throws: PushKeyError.wrongLength(0)) { try PushKey(bytes: []) }
    }

    @Test func rejectsBadAlphabet() {
        // base64url characters, and characters outside any base64 alphabet.
        for bad in ["-", "_", "*", "é", "."] {
            let text = bad + String(valid.dropFirst())
            #expect(throws: PushKeyError.invalidBase64(.invalidCharacter), "\(bad)") { try PushKey(base64: text) }
        }
    }

    @Test func rejectsMissingPadding() {
        #expect(throws: PushKeyError.invalidBase64(.lengthNotMultipleOfFour)) { try PushKey(base64: String(valid.dropLast())) }
    }

    @Test func rejectsWhitespace() {
        for text in [" " + valid, valid + "\n", String(valid.prefix(20)) + " " + String(valid.dropFirst(20)), valid + "\t"] {
            #expect(throws: PushKeyError.invalidBase64(.invalidCharacter)) { try PushKey(base64: text) }
        }
    }

    @Test func rejectsEmptyAndMisplacedPadding() {
        #expect(throws: PushKeyError.empty) { try PushKey(base64: "") }
        #expect(throws: PushKeyError.invalidBase64(.misplacedPadding)) { try PushKey(base64: "AA=A" + String(valid.dropFirst(4))) }
        #expect(throws: PushKeyError.invalidBase64(.misplacedPadding)) { try PushKey(base64: "====") }
    }

    @Test func reencodesCanonically() throws {
        // 'Ah=' style: the last character carries bits the decoder ignores; we store the canonical form.
        let canonical = Base64.encode([UInt8](repeating: 0, count: 32))
        #expect(canonical.hasSuffix("A="))
        let nonCanonical = String(canonical.dropLast(2)) + "B="
        let key = try PushKey(base64: nonCanonical)
        #expect(key.base64 == canonical)
    }

    @Test func neverPrintsItsBytes() throws {
        let key = try PushKey(base64: valid)
        for text in [key.description, String(describing: key), String(reflecting: key), "\(key)"] {
            #expect(!text.contains(valid))
            #expect(text.contains("redacted"))
        }
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!dumped.contains(valid))
        #expect(!dumped.contains("0, 1, 2"))
    }

    @Test func errorMessagesSayWhatIsExpected() {
        #expect(PushKeyError.wrongLength(31).description.contains("31 bytes"))
        #expect(PushKeyError.invalidBase64(.invalidCharacter).description.contains("base64 of exactly 32 bytes"))
    }

    @Test func generatedKeysDiffer() throws {
        let keys = try (0..<64).map { _ in try PushKey.generate().base64 }
        #expect(Set(keys).count == keys.count)
    }
}
