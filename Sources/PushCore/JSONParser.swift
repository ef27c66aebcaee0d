/// A strict RFC 8259 JSON parser for request bodies, payload files and settings.
///
/// Our own, so hostile input meets one well-understood code path: a nesting limit instead of
/// unbounded recursion, typed errors with a byte offset, and JavaScript's `JSON.parse` rules for
/// keys (compared exactly; a repeated key keeps its first position and takes the last value).
/// One reading of strings everywhere, the public `PushJSONValue(parsing:)` included: a `\u`
/// escape of an unpaired surrogate, which JavaScript keeps and a Swift string cannot hold, is
/// read as U+FFFD (README, "deliberate differences").
package struct JSONParser {
    /// Deepest nesting accepted; deeper input is rejected instead of exhausting the stack.
    package static let maximumDepth = 256

    /// Parses one JSON text (surrounding whitespace allowed, nothing else).
    package static func parse(_ text: String) throws(PushJSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Parses one JSON text from UTF-8 bytes (a leading BOM is not accepted, as in RFC 8259).
    package static func parse(_ bytes: [UInt8]) throws(PushJSONParseError) -> JSONValue {
        try parse(bytes, overflowingToInfinity: false)
    }

    /// Parses as `JSON.parse` reads text the JavaScript hub received: with
    /// `overflowingToInfinity`, a number beyond the double range (`1e400`) is ±Infinity, as
    /// there, instead of an error. Strings are read the same way in both.
    package static func parse(_ bytes: [UInt8], overflowingToInfinity: Bool) throws(PushJSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, overflowingToInfinity: overflowingToInfinity)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else {
            throw PushJSONParseError(.trailingCharacters, offset: parser.index)
        }
        return value
    }

    private let bytes: [UInt8]
    private let overflowingToInfinity: Bool
    private var index = 0

    private init(bytes: [UInt8], overflowingToInfinity: Bool) {
        self.bytes = bytes
        self.overflowingToInfinity = overflowingToInfinity
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(PushJSONParseError) -> JSONValue {
        guard depth <= JSONParser.maximumDepth else { throw PushJSONParseError(.tooDeep, offset: index) }
        guard index < bytes.count else { throw PushJSONParseError(.unexpectedEnd, offset: index) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw PushJSONParseError(.unexpectedCharacter, offset: index)
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(PushJSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw PushJSONParseError(.unexpectedEnd, offset: index) }
        let matches = literal.withUTF8Buffer { buffer in
            buffer.elementsEqual(bytes[index..<(index + count)])
        }
        guard matches else { throw PushJSONParseError(.unexpectedCharacter, offset: index) }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(PushJSONParseError) -> JSONValue {
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        var keys = ExactKeyIndex()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw PushJSONParseError(.unexpectedEnd, offset: index) }
            guard bytes[index] == UInt8(ascii: "\"") else { throw PushJSONParseError(.expectedKey, offset: index) }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count else { throw PushJSONParseError(.unexpectedEnd, offset: index) }
            guard bytes[index] == UInt8(ascii: ":") else { throw PushJSONParseError(.expectedColon, offset: index) }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth + 1)
            // As `JSON.parse`: a repeated key keeps its first position and takes the last value.
            // Keys are compared exactly, so "é" and "e\u{301}" stay two members, as in JavaScript.
            if let existing = keys.position(of: key, in: members) {
                members[existing].value = value
            } else {
                keys.insert(key, at: members.count)
                members.append((key: key, value: value))
            }
            skipWhitespace()
            guard index < bytes.count else { throw PushJSONParseError(.unexpectedEnd, offset: index) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(members)
            default: throw PushJSONParseError(.expectedCommaOrEnd, offset: index)
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(PushJSONParseError) -> JSONValue {
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw PushJSONParseError(.unexpectedEnd, offset: index) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw PushJSONParseError(.expectedCommaOrEnd, offset: index)
            }
        }
    }

    private mutating func parseString() throws(PushJSONParseError) -> String {
        let start = index
        index += 1
        var runStart = index
        var decoded: [UInt8] = []
        var escaped = false
        while true {
            guard index < bytes.count else { throw PushJSONParseError(.unexpectedEnd, offset: start) }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") { break }
            if byte < 0x20 { throw PushJSONParseError(.controlCharacterInString, offset: index) }
            if byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            if index > runStart { decoded.append(contentsOf: bytes[runStart..<index]) }
            escaped = true
            index += 1
            guard index < bytes.count else { throw PushJSONParseError(.unexpectedEnd, offset: index) }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): decoded.append(0x22)
            case UInt8(ascii: "\\"): decoded.append(0x5C)
            case UInt8(ascii: "/"): decoded.append(0x2F)
            case UInt8(ascii: "b"): decoded.append(0x08)
            case UInt8(ascii: "f"): decoded.append(0x0C)
            case UInt8(ascii: "n"): decoded.append(0x0A)
            case UInt8(ascii: "r"): decoded.append(0x0D)
            case UInt8(ascii: "t"): decoded.append(0x09)
            case UInt8(ascii: "u"):
                let scalar = try parseUnicodeEscape()
                UTF8.encode(scalar) { decoded.append($0) }
            default:
                throw PushJSONParseError(.invalidEscape, offset: index - 1)
            }
            runStart = index
        }
        let end = index
        index += 1
        // Validate UTF-8 strictly: invalid sequences are an error, not silently replaced.
        let text: String?
        if escaped {
            if end > runStart { decoded.append(contentsOf: bytes[runStart..<end]) }
            text = String(validating: decoded, as: UTF8.self)
        } else {
            text = String(validating: bytes[(start + 1)..<end], as: UTF8.self)
        }
        guard let text else { throw PushJSONParseError(.invalidUTF8, offset: start) }
        return text
    }

    /// Reads the hex digits after `\u`, joining a surrogate pair. A lone surrogate cannot be
    /// held by a Swift string, so it is read as U+FFFD; the escape after a lone high surrogate
    /// is then read on its own.
    private mutating func parseUnicodeEscape() throws(PushJSONParseError) -> Unicode.Scalar {
        let first = try readHex4()
        if (0xD800...0xDBFF).contains(first) {
            let afterFirst = index
            if index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                index += 2
                let second = try readHex4()
                if (0xDC00...0xDFFF).contains(second), let scalar = Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)) {
                    return scalar
                }
            }
            index = afterFirst  // the next escape, if any, is read on its own
            return "\u{FFFD}"
        }
        return Unicode.Scalar(first) ?? "\u{FFFD}"
    }

    private mutating func readHex4() throws(PushJSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw PushJSONParseError(.unexpectedEnd, offset: index) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw PushJSONParseError(.invalidEscape, offset: index)
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(PushJSONParseError) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw PushJSONParseError(.invalidNumber, offset: start) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(bytes[index]) {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        } else {
            throw PushJSONParseError(.invalidNumber, offset: start)
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw PushJSONParseError(.invalidNumber, offset: start) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw PushJSONParseError(.invalidNumber, offset: start) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let integer = Int64(text), JSONValue.isSafeInteger(integer) { return .integer(integer) }
        guard let double = Double(text) else { throw PushJSONParseError(.invalidNumber, offset: start) }
        // JSON.parse reads a number beyond the double range (`1e400`) as ±Infinity; the strict
        // reader refuses it.
        guard double.isFinite || overflowingToInfinity else { throw PushJSONParseError(.invalidNumber, offset: start) }
        // A whole number written with a fraction or exponent ("1.0", "1e2") is the same number to
        // JavaScript; keep one representation so equality matches. Beyond 2^53 JavaScript holds
        // only the nearest double, and so do we.
        if let integer = Int64(exactly: double), JSONValue.isSafeInteger(integer) {
            return .integer(integer)
        }
        return .double(double)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
}

/// Why a JSON text was refused, with the byte offset where it went wrong.
public struct PushJSONParseError: Error, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        case unexpectedEnd = "unexpected end of input"
        case unexpectedCharacter = "unexpected character"
        case trailingCharacters = "unexpected characters after the JSON value"
        case expectedKey = "expected a string key"
        case expectedColon = "expected ':' after an object key"
        case expectedCommaOrEnd = "expected ',' or a closing bracket"
        case invalidEscape = "invalid escape sequence in string"
        /// No longer produced: a lone surrogate escape is read as U+FFFD. Kept so a hub's
        /// exhaustive `switch` still compiles.
        case loneSurrogate = "unpaired UTF-16 surrogate in \\u escape"
        case controlCharacterInString = "unescaped control character in string"
        case invalidUTF8 = "invalid UTF-8 in string"
        case invalidNumber = "invalid number"
        case tooDeep = "nesting deeper than 256 levels"
    }

    public let reason: Reason
    /// Byte offset into the input where the problem was found.
    public let offset: Int

    init(_ reason: Reason, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "invalid JSON at byte \(offset): \(reason.rawValue)" }
}
