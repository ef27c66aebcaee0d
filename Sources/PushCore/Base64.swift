/// Standard base64 (RFC 4648 §4), strict on the way in.
///
/// Strict because a push key or envelope that decodes "leniently" could hide a client bug or
/// a truncated copy-paste: the alphabet is `A–Z a–z 0–9 + /`, padding only at the end, length a
/// multiple of 4, no whitespace.
package enum Base64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// The 6-bit value of a standard alphabet character, or nil.
    @inline(__always)
    package static func alphabetValue(_ byte: UInt8) -> UInt8? {
        let value = decodeTable[Int(byte)]
        return value == 0xFF ? nil : value
    }

    /// Encodes with padding.
    package static func encode<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        if let text = bytes.withContiguousStorageIfAvailable({ encode($0) }) { return text }
        return Array(bytes).withUnsafeBufferPointer { encode($0) }
    }

    /// Encodes straight into the string's own storage: no intermediate array.
    static func encode(_ input: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: encodedLength(input.count)) { output in
            encode(input, into: output)
        }
    }

    /// Writes the padded encoding of `input` into `output` (at least `encodedLength` bytes);
    /// returns the count written.
    static func encode(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutableBufferPointer<UInt8>) -> Int {
        guard let source = input.baseAddress, let target = output.baseAddress, output.count >= encodedLength(input.count) else {
            return 0
        }
        return alphabet.withUnsafeBufferPointer { table -> Int in
            guard let symbols = table.baseAddress else { return 0 }
            var i = 0
            var o = 0
            let count = input.count
            while i + 3 <= count {
                let n = UInt32(source[i]) << 16 | UInt32(source[i + 1]) << 8 | UInt32(source[i + 2])
                target[o] = symbols[Int(n >> 18 & 63)]
                target[o + 1] = symbols[Int(n >> 12 & 63)]
                target[o + 2] = symbols[Int(n >> 6 & 63)]
                target[o + 3] = symbols[Int(n & 63)]
                i += 3
                o += 4
            }
            let rest = count - i
            if rest > 0 {
                let n = UInt32(source[i]) << 16 | (rest == 2 ? UInt32(source[i + 1]) << 8 : 0)
                target[o] = symbols[Int(n >> 18 & 63)]
                target[o + 1] = symbols[Int(n >> 12 & 63)]
                target[o + 2] = rest == 2 ? symbols[Int(n >> 6 & 63)] : UInt8(ascii: "=")
                target[o + 3] = UInt8(ascii: "=")
                o += 4
            }
            return o
        }
    }

    /// Encodes to ASCII bytes with padding.
    package static func encodeToBytes<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        let input = Array(bytes)
        let alphabet = Base64.alphabet
        var out: [UInt8] = []
        out.reserveCapacity(encodedLength(input.count))
        var i = 0
        while i + 3 <= input.count {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(alphabet[Int(n & 63)])
            i += 3
        }
        let rest = input.count - i
        if rest == 1 {
            let n = UInt32(input[i]) << 16
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(contentsOf: [UInt8(ascii: "="), UInt8(ascii: "=")])
        } else if rest == 2 {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)])
            out.append(UInt8(ascii: "="))
        }
        return out
    }

    /// The padded base64 length of `count` bytes: 4·⌈count/3⌉.
    package static func encodedLength(_ count: Int) -> Int {
        (count + 2) / 3 * 4
    }

    /// Base64url without padding (RFC 7515), for JWT segments.
    package static func urlEncodeUnpadded<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var out = encodeToBytes(bytes)
        while out.last == UInt8(ascii: "=") { out.removeLast() }
        for index in out.indices {
            if out[index] == UInt8(ascii: "+") { out[index] = UInt8(ascii: "-") } else if out[index] == UInt8(ascii: "/") { out[index] = UInt8(ascii: "_") }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes URL-safe base64 (RFC 4648 §5) with optional padding, as browsers give Web Push
    /// keys (`PushSubscription.toJSON()`) and the `web-push` package stores VAPID keys. Nil on
    /// any other character, on `+`/`/` (the standard alphabet is not URL-safe), or a bad length.
    package static func urlDecode(_ text: String) -> [UInt8]? {
        var bytes = Array(text.utf8)
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        guard !bytes.isEmpty, bytes.count % 4 != 1, Array(text.utf8).count - bytes.count <= 2 else { return nil }
        for index in bytes.indices {
            switch bytes[index] {
            case UInt8(ascii: "-"): bytes[index] = UInt8(ascii: "+")
            case UInt8(ascii: "_"): bytes[index] = UInt8(ascii: "/")
            case UInt8(ascii: "+"), UInt8(ascii: "/"): return nil
            default: break
            }
        }
        while bytes.count % 4 != 0 { bytes.append(UInt8(ascii: "=")) }
        return try? decode(utf8: bytes)
    }

    /// Why a base64 text was refused (public as `PushKeyError.Base64Failure`, the reason inside
    /// `PushKeyError.invalidBase64`, which has the same cases).
    package enum DecodingFailure: String, Error, Sendable, Hashable {
        case empty = "it is empty"
        case lengthNotMultipleOfFour = "its length is not a multiple of 4"
        case invalidCharacter = "it contains a character outside A-Z a-z 0-9 + / (whitespace included)"
        case misplacedPadding = "'=' padding appears before the end or more than twice"
    }

    /// Decodes strictly: `^[A-Za-z0-9+/]+={0,2}$` with a length that is a multiple of 4.
    package static func decode(_ text: String) throws(DecodingFailure) -> [UInt8] {
        try decode(utf8: Array(text.utf8))
    }

    /// Decodes strictly from ASCII bytes.
    package static func decode(utf8 input: [UInt8]) throws(DecodingFailure) -> [UInt8] {
        try input.withUnsafeBufferPointer { (buffer) throws(DecodingFailure) -> [UInt8] in try decode(utf8: buffer) }
    }

    /// Decodes the padded form of exactly `byteCount` bytes in one pass, or nil: what
    /// `decode(utf8:)` accepts for that length (alphabet characters, then the padding the length
    /// needs, unused low bits dropped), without its error details, for hot reads such as a
    /// registry listing's stored push keys.
    package static func decodePadded(utf8 input: UnsafeBufferPointer<UInt8>, byteCount: Int) -> [UInt8]? {
        guard byteCount > 0, input.count == encodedLength(byteCount), let source = input.baseAddress else { return nil }
        let padding = (3 - byteCount % 3) % 3
        let symbols = input.count - padding
        for index in symbols..<input.count where source[index] != UInt8(ascii: "=") { return nil }
        return decodeTable.withUnsafeBufferPointer { table -> [UInt8]? in
            var invalid: UInt32 = 0
            let bytes = [UInt8](unsafeUninitializedCapacity: byteCount) { output, initialized in
                func value(_ index: Int) -> UInt32 {
                    let v = UInt32(table[Int(source[index])])
                    invalid |= v
                    return v
                }
                initialized = decodeSymbols(symbols, into: output, value: value)
            }
            // Table entries are 0...63 for the alphabet and 0xFF for anything else.
            return invalid & 0xC0 == 0 ? bytes : nil
        }
    }

    /// Decodes strictly from ASCII bytes in place (a column's bytes, a request body's slice):
    /// one pass to check, one to decode straight into the result's storage.
    package static func decode(utf8 input: UnsafeBufferPointer<UInt8>) throws(DecodingFailure) -> [UInt8] {
        guard let source = input.baseAddress, !input.isEmpty else { throw .empty }
        let count = input.count
        var padding = 0
        try decodeTable.withUnsafeBufferPointer { (table) throws(DecodingFailure) in
            for index in 0..<count {
                let byte = source[index]
                if byte == UInt8(ascii: "=") {
                    padding += 1
                    continue
                }
                if table[Int(byte)] == 0xFF { throw .invalidCharacter }
                if padding > 0 { throw .misplacedPadding }
            }
        }
        guard padding <= 2, padding < count else { throw .misplacedPadding }
        guard count % 4 == 0 else { throw .lengthNotMultipleOfFour }
        let symbols = count - padding
        // Every 4 symbols give 3 bytes; 2 or 3 trailing symbols give 1 or 2 (their unused low bits dropped).
        let length = symbols / 4 * 3 + max(0, symbols % 4 - 1)
        return decodeTable.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: length) { output, initialized in
                func value(_ index: Int) -> UInt32 { UInt32(table[Int(source[index])]) }
                initialized = decodeSymbols(symbols, into: output, value: value)
            }
        }
    }

    /// Writes the bytes of `symbols` alphabet symbols (no padding) into `output`: 3 for every 4,
    /// and 1 or 2 for 2 or 3 trailing ones (their unused low bits dropped); `value` gives the
    /// symbol at a position as its 6 bits. Returns how many bytes were written.
    @inline(__always)
    private static func decodeSymbols(_ symbols: Int, into output: UnsafeMutableBufferPointer<UInt8>, value: (Int) -> UInt32) -> Int {
        var i = 0
        var o = 0
        while i + 4 <= symbols {
            let n = value(i) << 18 | value(i + 1) << 12 | value(i + 2) << 6 | value(i + 3)
            output[o] = UInt8(truncatingIfNeeded: n >> 16)
            output[o + 1] = UInt8(truncatingIfNeeded: n >> 8)
            output[o + 2] = UInt8(truncatingIfNeeded: n)
            i += 4
            o += 3
        }
        let rest = symbols - i
        if rest >= 2 {
            let n = value(i) << 18 | value(i + 1) << 12 | (rest == 3 ? value(i + 2) << 6 : 0)
            output[o] = UInt8(truncatingIfNeeded: n >> 16)
            o += 1
            if rest == 3 {
                output[o] = UInt8(truncatingIfNeeded: n >> 8)
                o += 1
            }
        }
        return o
    }
}
