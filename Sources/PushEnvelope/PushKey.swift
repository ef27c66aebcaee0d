/// A device's 32-byte AES-256-GCM push key.
///
/// The key is the only thing standing between a notification and the relay, Apple or Google,
/// so it never prints: `description`, `debugDescription` and mirrors are redacted.
public struct PushKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The required key length.
    public static let byteCount = 32

    let bytes: [UInt8]

    /// Wraps raw key bytes; exactly 32 of them.
    public init(bytes: [UInt8]) throws(PushKeyError) {
        guard bytes.count == PushKey.byteCount else { throw .wrongLength(bytes.count) }
        self.bytes = bytes
    }

    /// Parses the registration's `pushKey`: strict base64 that decodes to exactly 32 bytes.
    public init(base64 text: String) throws(PushKeyError) {
        guard !text.isEmpty else { throw .empty }
        let decoded: [UInt8]
        do {
            decoded = try Base64.decode(text)
        } catch {
            throw .invalidBase64(PushKeyError.Base64Failure(error))
        }
        try self.init(bytes: decoded)
    }

    /// Parses a registration's `pushKey` as the JavaScript hub accepts it: the whole text is
    /// base64 alphabet characters (`A–Z a–z 0–9 + /`) followed by at most two `=`, and decodes
    /// leniently (Node's `Buffer.from(text, "base64")`: padding optional, unused trailing bits
    /// dropped) to exactly 32 bytes. That is exactly 43 alphabet characters and 0, 1 or 2 `=`.
    /// `base64` then gives the canonical 44-character form the hub stores.
    public init(lenientBase64 text: String) throws(PushKeyError) {
        let input = Array(text.utf8)
        guard !input.isEmpty else { throw .empty }
        var alphabetCount = 0
        while alphabetCount < input.count, Base64.alphabetValue(input[alphabetCount]) != nil { alphabetCount += 1 }
        let padding = input.count - alphabetCount
        guard input[alphabetCount...].allSatisfy({ $0 == UInt8(ascii: "=") }) else { throw .invalidBase64(.invalidCharacter) }
        guard alphabetCount > 0, padding <= 2 else { throw .invalidBase64(.misplacedPadding) }
        var out: [UInt8] = []
        out.reserveCapacity(alphabetCount * 6 / 8)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in input[..<alphabetCount] {
            accumulator = (accumulator << 6 | UInt32(Base64.alphabetValue(byte) ?? 0)) & 0xFFFF
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        try self.init(bytes: out)
    }

    /// A fresh random key, as a device would generate it (and as tests and the demo need).
    public static func generate() throws(PushEnvelopeError) -> PushKey {
        PushKey(unchecked: try SecureRandom.bytes(byteCount))
    }

    private init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// The canonical padded base64 form, as stored in the registry. Handle as a secret.
    public var base64: String { Base64.encode(bytes) }

    /// The raw key bytes. Handle as a secret.
    public var rawBytes: [UInt8] { bytes }

    public var description: String { "PushKey(redacted)" }
    public var debugDescription: String { "PushKey(redacted)" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

/// Why a push key was refused; each message says what a valid key looks like.
public enum PushKeyError: Error, Sendable, Hashable, CustomStringConvertible {
    case empty
    case invalidBase64(Base64Failure)
    case wrongLength(Int)

    /// Why the key's base64 was refused.
    public enum Base64Failure: String, Error, Sendable, Hashable {
        case empty = "it is empty"
        case lengthNotMultipleOfFour = "its length is not a multiple of 4"
        case invalidCharacter = "it contains a character outside A-Z a-z 0-9 + / (whitespace included)"
        case misplacedPadding = "'=' padding appears before the end or more than twice"

        /// The core's failure, under its public name.
        init(_ failure: Base64.DecodingFailure) {
            switch failure {
            case .empty: self = .empty
            case .lengthNotMultipleOfFour: self = .lengthNotMultipleOfFour
            case .invalidCharacter: self = .invalidCharacter
            case .misplacedPadding: self = .misplacedPadding
            }
        }
    }

    public var description: String {
        switch self {
        case .empty:
            return "pushKey is empty: expected base64 of exactly 32 bytes"
        case .invalidBase64(let failure):
            return "pushKey is not valid base64 (\(failure.rawValue)): expected base64 of exactly 32 bytes"
        case .wrongLength(let count):
            return "pushKey decodes to \(count) bytes: expected base64 of exactly 32 bytes"
        }
    }
}
