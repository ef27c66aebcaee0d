/// A strict RFC 8259 JSON parser for request bodies, payload files and settings.
///
/// Our own, so hostile input meets one well-understood code path: a nesting limit instead of
/// unbounded recursion, typed errors with a byte offset, and JavaScript's `JSON.parse` rule for
/// duplicate keys (the last one wins).
public struct JSONParser {
    /// Deepest nesting accepted; deeper input is rejected instead of exhausting the stack.
    public static let maximumDepth = 256

    /// Parses one JSON text (surrounding whitespace allowed, nothing else).
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Parses one JSON text from UTF-8 bytes (a leading BOM is not accepted, as in RFC 8259).
    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == bytes.count else {
            throw JSONParseError(.trailingCharacters, offset: parser.index)
        }
        return value
    }

    private let bytes: [UInt8]
    private var index = 0

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= JSONParser.maximumDepth else { throw JSONParseError(.tooDeep, offset: index) }
        guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw JSONParseError(.unexpectedCharacter, offset: index)
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
        let matches = literal.withUTF8Buffer { buffer in
            buffer.elementsEqual(bytes[index..<(index + count)])
        }
        guard matches else { throw JSONParseError(.unexpectedCharacter, offset: index) }
        index += count
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
            guard bytes[index] == UInt8(ascii: "\"") else { throw JSONParseError(.expectedKey, offset: index) }
            let key = try parseString()
            // Swift strings compare canonically equivalent keys ("é" composed and decomposed, "K"
            // and the Kelvin sign) as equal; JavaScript keeps them apart. Refuse the ambiguity
            // rather than merge two members into one.
            if let existing = members.index(forKey: key), !members.keys[existing].utf8.elementsEqual(key.utf8) {
                throw JSONParseError(.equivalentKeys, offset: index)
            }
            skipWhitespace()
            guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
            guard bytes[index] == UInt8(ascii: ":") else { throw JSONParseError(.expectedColon, offset: index) }
            index += 1
            skipWhitespace()
            members[key] = try parseValue(depth: depth + 1)
            skipWhitespace()
            guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(members)
            default: throw JSONParseError(.expectedCommaOrEnd, offset: index)
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
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
            guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw JSONParseError(.expectedCommaOrEnd, offset: index)
            }
        }
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        index += 1
        var runStart = index
        var decoded: [UInt8] = []
        func flushRun(_ end: Int) {
            if end > runStart { decoded.append(contentsOf: bytes[runStart..<end]) }
        }
        while true {
            guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: start) }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                flushRun(index)
                index += 1
                break
            }
            if byte < 0x20 { throw JSONParseError(.controlCharacterInString, offset: index) }
            if byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            flushRun(index)
            index += 1
            guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
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
                decoded.append(contentsOf: Array(String(Character(scalar)).utf8))
            default:
                throw JSONParseError(.invalidEscape, offset: index - 1)
            }
            runStart = index
        }
        // Validate UTF-8 strictly: invalid sequences are an error, not silently replaced. (In
        // one pass over the bytes: decoding scalar by scalar made long strings, such as a relay's
        // 3200-byte envelope, the parser's main cost.)
        guard let string = String(validating: decoded, as: UTF8.self) else { throw JSONParseError(.invalidUTF8, offset: start) }
        return string
    }

    /// Reads the hex digits after `\u`, joining a surrogate pair. A lone surrogate cannot be
    /// held by a Swift string, so it is rejected rather than replaced.
    private mutating func parseUnicodeEscape() throws(JSONParseError) -> Unicode.Scalar {
        let first = try readHex4()
        if (0xD800...0xDBFF).contains(first) {
            guard index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw JSONParseError(.loneSurrogate, offset: index)
            }
            index += 2
            let second = try readHex4()
            guard (0xDC00...0xDFFF).contains(second) else { throw JSONParseError(.loneSurrogate, offset: index) }
            let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            guard let scalar = Unicode.Scalar(value) else { throw JSONParseError(.loneSurrogate, offset: index) }
            return scalar
        }
        guard let scalar = Unicode.Scalar(first) else { throw JSONParseError(.loneSurrogate, offset: index) }
        return scalar
    }

    private mutating func readHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw JSONParseError(.invalidEscape, offset: index)
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw JSONParseError(.invalidNumber, offset: start) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(bytes[index]) {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        } else {
            throw JSONParseError(.invalidNumber, offset: start)
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw JSONParseError(.invalidNumber, offset: start) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw JSONParseError(.invalidNumber, offset: start) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let integer = Int64(text), JSONValue.isSafeInteger(integer) { return .integer(integer) }
        guard let double = Double(text), double.isFinite else { throw JSONParseError(.invalidNumber, offset: start) }
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
public struct JSONParseError: Error, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        case unexpectedEnd = "unexpected end of input"
        case unexpectedCharacter = "unexpected character"
        case trailingCharacters = "unexpected characters after the JSON value"
        case expectedKey = "expected a string key"
        case expectedColon = "expected ':' after an object key"
        case expectedCommaOrEnd = "expected ',' or a closing bracket"
        case invalidEscape = "invalid escape sequence in string"
        case loneSurrogate = "unpaired UTF-16 surrogate in \\u escape"
        case controlCharacterInString = "unescaped control character in string"
        case invalidUTF8 = "invalid UTF-8 in string"
        case invalidNumber = "invalid number"
        case tooDeep = "nesting deeper than 256 levels"
        case equivalentKeys = "two object keys differ only in Unicode normalization"
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
