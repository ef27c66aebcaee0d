import PushEnvelope

/// The JavaScript hub's string helpers, counted as JavaScript counts: in UTF-16 code units
/// (`String.length`, `slice`), trimmed with `String.prototype.trim`'s whitespace set.
///
/// One deliberate difference: JavaScript's `slice` can cut a surrogate pair in half and send the
/// lone half (`\ud83d`); a Swift string cannot hold one, so a cut that would land inside a pair
/// is made one unit earlier (the text ends up one unit shorter, never longer).
enum HubText {
    /// `String.prototype.trim`'s set (and `\s`): U+0009–U+000D, U+0020, U+00A0, U+1680,
    /// U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF. Not U+0085, U+180E, U+200B.
    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF: return true
        default: return false
        }
    }

    static func trim(_ text: String) -> String { trimEnd(trimStart(text)) }

    static func trimStart(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isWhitespace($0) }) else { return "" }
        return String(scalars[first...])
    }

    static func trimEnd(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let last = scalars.lastIndex(where: { !isWhitespace($0) }) else { return "" }
        return String(scalars[...last])
    }

    static func isBlank(_ text: String) -> Bool { text.unicodeScalars.allSatisfy(isWhitespace) }

    /// JavaScript's `length`.
    static func length(_ text: String) -> Int { text.utf16.count }

    /// `text.slice(0, units)`, but never half a surrogate pair.
    static func prefix(_ text: String, units: Int) -> String {
        guard units > 0 else { return "" }
        var used = 0
        var end = text.unicodeScalars.startIndex
        for index in text.unicodeScalars.indices {
            let size = UTF16.width(text.unicodeScalars[index])
            if used + size > units { break }
            used += size
            end = text.unicodeScalars.index(after: index)
        }
        return String(text.unicodeScalars[..<end])
    }

    /// T-ready (js-hub-behaviour.md §1.2): for ready text, notifySummary fields and task
    /// summaries. Trimmed; at most `limit` units; cut texts end in `...` after an end-trim.
    static func readyTruncate(_ text: String, limit: Int) -> String {
        let trimmed = trim(text)
        guard limit > 0, !trimmed.isEmpty else { return "" }
        if length(trimmed) <= limit { return trimmed }
        if limit <= 3 { return String(repeating: ".", count: limit) }
        return trimEnd(prefix(trimmed, units: limit - 3)) + "..."
    }

    /// T-tool (§1.2): inside tool formatters. No trimming; at most `max` units, cut ones end in `...`.
    static func toolTruncate(_ text: String, max: Int) -> String {
        guard !text.isEmpty else { return "" }
        if length(text) <= max { return text }
        return prefix(text, units: max - 3) + "..."
    }

    /// Splits on one scalar, keeping empty pieces (`String.prototype.split`).
    static func split(_ text: String, on separator: Unicode.Scalar) -> [String] {
        text.unicodeScalars.split(separator: separator, omittingEmptySubsequences: false).map { String(String.UnicodeScalarView($0)) }
    }

    /// Exactly the same code units (JavaScript's `===` on strings; Swift's `==` would also call
    /// canonically equivalent strings equal).
    static func same(_ a: String, _ b: String) -> Bool {
        a.utf8.elementsEqual(b.utf8)
    }

    /// The first index at or after `start` where `needle` occurs in `haystack`.
    static func find(_ needle: [Unicode.Scalar], in haystack: [Unicode.Scalar], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        for index in start...(haystack.count - needle.count) where haystack[index] == needle[0] {
            if haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
        }
        return nil
    }

    /// JavaScript's `String(value)` of a JSON value: an array joins its elements' strings with
    /// `,` (null elements empty), an object is `[object Object]`, a number as JavaScript prints
    /// it (`Infinity` beyond the double range).
    static func javaScriptString(_ value: PushJSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .string(let text): return text
        case .integer, .double:
            if case .double(let d) = value, !d.isFinite { return d.isNaN ? "NaN" : (d < 0 ? "-Infinity" : "Infinity") }
            return value.canonicalString
        case .array(let elements):
            return elements.map { $0 == .null ? "" : javaScriptString($0) }.joined(separator: ",")
        case .object: return "[object Object]"
        }
    }
}
