/// Serializes a `JSONValue` byte-identically to the JavaScript hub's canonical form:
/// `JSON.stringify` of an object whose keys were recursively sorted with JavaScript's default
/// sort (UTF-16 code-unit order), with no whitespace. Rebuilding the sorted object in JavaScript
/// still enumerates array-index keys ("0" … "4294967294") first, in numeric order, and drops a
/// `__proto__` key (assigning it sets the prototype); so do we.
package enum CanonicalJSON {
    /// The canonical UTF-8 bytes of `value`.
    package static func bytes(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, sorted: true, into: &out)
        return out
    }

    /// The canonical text of `value`.
    package static func string(_ value: JSONValue) -> String {
        String(decoding: bytes(value), as: UTF8.self)
    }

    /// `JSON.stringify(value)` without sorting: objects in JavaScript's enumeration order
    /// (array-index keys ascending, then the others in insertion order), as the JavaScript hub
    /// writes FCM messages, `notifySummary` and a permission's `Args:` line.
    package static func javaScriptBytes(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, sorted: false, into: &out)
        return out
    }

    /// Orders keys as JavaScript's `Array.prototype.sort` does by default: by UTF-16 code units.
    /// This differs from Swift's `String <` (Unicode scalars, canonical equivalence) for
    /// astral-plane characters versus U+E000–U+FFFF, and for composed versus decomposed forms.
    package static func jsKeyOrder(_ a: String, _ b: String) -> Bool {
        JSONKey.codeUnitOrder(a, b)
    }

    static func write(_ value: JSONValue, sorted: Bool, into out: inout [UInt8]) {
        switch value {
        case .null:
            out.append(contentsOf: "null".utf8)
        case .bool(let b):
            out.append(contentsOf: (b ? "true" : "false").utf8)
        case .integer(let i):
            // Beyond 2^53 JavaScript would hold (and print) the nearest double.
            out.append(contentsOf: (JSONValue.isSafeInteger(i) ? String(i) : javaScriptNumber(Double(i))).utf8)
        case .double(let d):
            out.append(contentsOf: javaScriptNumber(d).utf8)
        case .string(let s):
            writeString(s, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                write(element, sorted: sorted, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            if sorted {
                writeSortedObject(members, into: &out)
            } else {
                out.append(UInt8(ascii: "{"))
                var first = true
                for member in JSONKey.enumerationOrder(members) {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    writeString(member.key, into: &out)
                    out.append(UInt8(ascii: ":"))
                    write(member.value, sorted: false, into: &out)
                }
                out.append(UInt8(ascii: "}"))
            }
        }
    }

    /// Array-index keys first (numerically), then code-unit order; a key listed twice is written
    /// once with its last value; `__proto__` is dropped.
    private static func writeSortedObject(_ members: [(key: String, value: JSONValue)], into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        defer { out.append(UInt8(ascii: "}")) }
        if members.count == 1 {
            let member = members[0]
            if isProto(member.key) { return }
            writeString(member.key, into: &out)
            out.append(UInt8(ascii: ":"))
            write(member.value, sorted: true, into: &out)
            return
        }
        guard !members.isEmpty else { return }
        // Non-index keys rank UInt64.max and are then ordered by code units.
        var order: [(rank: UInt64, position: Int)] = []
        order.reserveCapacity(members.count)
        for (position, member) in members.enumerated() {
            order.append((JSONKey.arrayIndex(member.key).map { UInt64($0) } ?? .max, position))
        }
        order.sort { a, b in
            if a.rank != b.rank { return a.rank < b.rank }
            guard a.rank == .max else { return a.position < b.position }
            return JSONKey.codeUnitOrder(members[a.position].key, members[b.position].key)
        }
        var first = true
        var i = 0
        while i < order.count {
            var chosen = order[i].position
            var j = i + 1
            while j < order.count, JSONKey.same(members[order[j].position].key, members[chosen].key) {
                chosen = max(chosen, order[j].position)
                j += 1
            }
            i = j
            let member = members[chosen]
            if isProto(member.key) { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            writeString(member.key, into: &out)
            out.append(UInt8(ascii: ":"))
            write(member.value, sorted: true, into: &out)
        }
    }

    @inline(__always)
    private static func isProto(_ key: String) -> Bool {
        key.utf8.count == 9 && key.utf8.elementsEqual("__proto__".utf8)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Escapes exactly as `JSON.stringify`: `\"`, `\\`, the five short control escapes, other
    /// controls below U+0020 as lowercase `\u00xx`; `/`, DEL and all non-ASCII (U+2028/2029
    /// included) are written as they are. Swift strings hold no lone surrogates, so the
    /// well-formed-stringify rule for them never applies.
    package static func writeString(_ s: String, into out: inout [UInt8]) {
        var s = s
        s.withUTF8 { writeString(utf8: $0, into: &out) }
    }

    static func writeString(utf8 bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var runStart = 0
        var index = 0
        let count = bytes.count
        while index < count {
            let byte = bytes[index]
            guard byte < 0x20 || byte == 0x22 || byte == 0x5C else {
                index += 1
                continue
            }
            if index > runStart { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index])) }
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x08: out.append(contentsOf: [0x5C, UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [0x5C, UInt8(ascii: "f")])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            default:
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            }
            index += 1
            runStart = index
        }
        if count > runStart { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<count])) }
        out.append(UInt8(ascii: "\""))
    }

    /// `Number.prototype.toString` for the cases JSON can hold: integral values below 1e21 are
    /// written without a fraction; others use the shortest round-trip digits with JavaScript's
    /// exponent form (`1e+21`, `1e-7`). Non-finite values become `null`, as in JavaScript.
    static func javaScriptNumber(_ d: Double) -> String {
        guard d.isFinite else { return "null" }
        if d == 0 { return "0" }
        if d == d.rounded(), abs(d) < 1e21 {
            if let i = Int64(exactly: d), JSONValue.isSafeInteger(i) { return String(i) }
            return fixedNotation(d)  // shortest digits, then zeros: 2^60 → "1152921504606847000"
        }
        let magnitude = abs(d)
        if magnitude >= 1e-6 && magnitude < 1e21 {
            return fixedNotation(d)
        }
        // Swift prints "1e-07" / "1.5e+22"; JavaScript prints "1e-7" / "1.5e+22".
        var text = "\(d)"
        if let eIndex = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            let mantissa = String(text[..<eIndex])
            var exponent = String(text[text.index(after: eIndex)...])
            var sign = "+"
            if exponent.hasPrefix("-") { sign = "-"; exponent.removeFirst() } else if exponent.hasPrefix("+") { exponent.removeFirst() }
            while exponent.count > 1 && exponent.hasPrefix("0") { exponent.removeFirst() }
            text = mantissa + "e" + sign + exponent
        }
        return text
    }

    /// Shortest round-trip digits written without an exponent (JavaScript's form for
    /// 1e-6 ≤ |d| < 1e21).
    private static func fixedNotation(_ d: Double) -> String {
        let text = "\(d)"
        guard let eIndex = text.firstIndex(where: { $0 == "e" || $0 == "E" }) else {
            return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
        }
        var mantissa = String(text[..<eIndex])
        guard let exponent = Int(text[text.index(after: eIndex)...]) else { return text }
        let negative = mantissa.hasPrefix("-")
        if negative { mantissa.removeFirst() }
        let parts = mantissa.split(separator: ".", omittingEmptySubsequences: false)
        let intPart = String(parts.first ?? "")
        let fracPart = parts.count > 1 ? String(parts[1]) : ""
        var digits = intPart + fracPart
        var pointPosition = intPart.count + exponent
        if pointPosition <= 0 {
            digits = String(repeating: "0", count: -pointPosition + 1) + digits
            pointPosition = 1
        }
        if digits.count < pointPosition {
            digits += String(repeating: "0", count: pointPosition - digits.count)
        }
        let splitIndex = digits.index(digits.startIndex, offsetBy: pointPosition)
        var result = String(digits[..<splitIndex])
        var fraction = String(digits[splitIndex...])
        while fraction.hasSuffix("0") { fraction.removeLast() }
        if !fraction.isEmpty { result += "." + fraction }
        return (negative ? "-" : "") + result
    }
}

extension PushJSONValue {
    /// The canonical UTF-8 bytes, as the JavaScript hub writes them.
    public var canonicalBytes: [UInt8] { CanonicalJSON.bytes(self) }
    /// The canonical text, as the JavaScript hub writes it.
    public var canonicalString: String { CanonicalJSON.string(self) }
    /// `JSON.stringify(self)` in JavaScript's enumeration order, not sorted.
    package var javaScriptString: String { String(decoding: CanonicalJSON.javaScriptBytes(self), as: UTF8.self) }
}
