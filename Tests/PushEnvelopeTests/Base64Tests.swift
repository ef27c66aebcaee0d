import Foundation
import Testing

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
}
