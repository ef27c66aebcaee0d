import Foundation
import Testing

@testable import PushCore
@testable import PushEnvelope

/// The strict decoder against Foundation's: every length round-trips, and the non-canonical
/// trailing bits, padding and alphabet rules are what they were before it decoded in place.
@Suite struct Base64Tests {
    @Test func everyLengthRoundTripsAndMatchesFoundation() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0...100 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64.encode(bytes)
            #expect(text == Data(bytes).base64EncodedString())
            if length == 0 {
                #expect(throws: Base64.DecodingFailure.empty) { try Base64.decode(text) }
            } else {
                #expect(try Base64.decode(text) == bytes, "\(length)")
            }
        }
    }

    @Test func refusesWhatItRefusedAndDropsUnusedBits() throws {
        #expect(try Base64.decode("AB==") == [0x00])  // the low 4 bits of "B" are unused
        #expect(try Base64.decode("AAB=") == [0x00, 0x00])
        #expect(throws: Base64.DecodingFailure.invalidCharacter) { try Base64.decode("AA-_") }
        #expect(throws: Base64.DecodingFailure.misplacedPadding) { try Base64.decode("A=AA") }
        #expect(throws: Base64.DecodingFailure.misplacedPadding) { try Base64.decode("A===") }
        #expect(throws: Base64.DecodingFailure.misplacedPadding) { try Base64.decode("====") }
        #expect(throws: Base64.DecodingFailure.lengthNotMultipleOfFour) { try Base64.decode("AAA") }
    }

    /// The one-pass decoder of a known length (stored push keys) accepts exactly what the strict
    /// decoder accepts for that length, and gives the same bytes.
    @Test func paddedDecoderOfAKnownLengthAgreesWithTheStrictOne() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ ".utf8)
        for length in 1...40 {
            for trial in 0..<50 {
                let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                var text = Array(Base64.encode(bytes).utf8)
                // Most trials damage the text: a character swapped, one dropped or one added.
                switch trial % 5 {
                case 1, 2: text[Int.random(in: 0..<text.count, using: &generator)] = alphabet.randomElement(using: &generator) ?? 0
                case 3: text.remove(at: Int.random(in: 0..<text.count, using: &generator))
                case 4: text.insert(alphabet.randomElement(using: &generator) ?? 0, at: Int.random(in: 0...text.count, using: &generator))
                default: break
                }
                let strict = (try? Base64.decode(utf8: text)).flatMap { $0.count == length ? $0 : nil }
                let padded = text.withUnsafeBufferPointer { Base64.decodePadded(utf8: $0, byteCount: length) }
                #expect(padded == strict, "\(length): \(String(decoding: text, as: UTF8.self))")
                if trial % 5 == 0 { #expect(padded == bytes) }
            }
        }
        // Unused low bits are dropped, as the strict decoder drops them.
        let key = Array("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=".utf8)
        #expect(key.withUnsafeBufferPointer { Base64.decodePadded(utf8: $0, byteCount: 32) } == [UInt8](repeating: 0, count: 32))
    }
}
