/// A JSON value small enough to serialize exactly as the JavaScript hub does.
///
/// We own this type (rather than Foundation's `JSONSerialization`) because the envelope's
/// plaintext must be byte-identical to `JSON.stringify` of recursively key-sorted objects, and
/// because Foundation blurs booleans and numbers on Linux.
///
/// An object is a list of members, as a JavaScript object is: keys are compared by their exact
/// Unicode scalars (never with Swift's `==`, which would merge `"é"` and `"e\u{301}"`, or `"K"`
/// and the Kelvin sign, where JavaScript keeps two keys), and the list keeps insertion order,
/// which is JavaScript's enumeration order for non-index keys (`Object.entries`, plain
/// `JSON.stringify`). Each key appears once; if a list holds a key twice, the last value wins
/// at the first position, as in `JSON.parse`. Equality ignores member order.
///
/// Public as `PushJSONValue` (a hub hands the composer its sessions and messages as JSON);
/// inside the package it is usually called `PushJSONValue`.
public enum PushJSONValue: Sendable {
    case null
    case bool(Bool)
    /// A whole number, written without a fraction.
    case integer(Int64)
    /// Any other number, written as JavaScript's `Number.prototype.toString` would.
    case double(Double)
    case string(String)
    case array([PushJSONValue])
    /// The members in insertion order; see the type's documentation.
    case object([(key: String, value: PushJSONValue)])
}

/// The package's short name for `PushJSONValue`.
package typealias JSONValue = PushJSONValue

extension PushJSONValue {
    /// Parses JSON text strictly (RFC 8259; nesting up to 256 levels; strings valid UTF-8), as
    /// a hub reads the sessions and messages it stored. A lone surrogate escape (`"\ud800"`),
    /// which JavaScript keeps and a Swift string cannot hold, is read as U+FFFD, as everywhere
    /// in the package.
    public init(parsing bytes: [UInt8]) throws(PushJSONParseError) {
        self = try JSONParser.parse(bytes)
    }

    /// Parses JSON text strictly; see `init(parsing:)` for bytes.
    public init(parsing text: String) throws(PushJSONParseError) {
        self = try JSONParser.parse(text)
    }
}

extension PushJSONValue {
    /// An object from a Swift dictionary (whose keys Swift has already compared with `==`), its
    /// members in code-unit order so the result does not depend on hashing.
    public static func object(_ members: [String: PushJSONValue]) -> PushJSONValue {
        .object(members.map { (key: $0.key, value: $0.value) }.sorted { JSONKey.codeUnitOrder($0.key, $1.key) })
    }

    /// The string payload when this is a string, otherwise nil.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The members, in insertion order, when this is an object, otherwise nil.
    public var objectValue: [(key: String, value: PushJSONValue)]? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The elements when this is an array, otherwise nil.
    public var arrayValue: [PushJSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// A short name of the value's JSON type, for error messages ("expected a string, got number").
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .integer, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// The member whose key is exactly `key`, scalar for scalar, as JavaScript looks it up (Swift's
    /// `==` would also match a canonically equivalent key such as one with a Kelvin sign). When a
    /// list holds the key twice, the last value.
    public subscript(key: String) -> PushJSONValue? {
        guard case .object(let members) = self else { return nil }
        var found: PushJSONValue?
        for member in members where JSONKey.same(member.key, key) { found = member.value }
        return found
    }

    /// Whether JavaScript holds `value` exactly (|value| ≤ 2^53).
    package static func isSafeInteger(_ value: Int64) -> Bool {
        value.magnitude <= 1 << 53
    }
}

extension PushJSONValue: Hashable {
    /// Objects are equal when they hold the same keys (exactly) with equal values, in any order.
    public static func == (lhs: PushJSONValue, rhs: PushJSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.integer(let a), .integer(let b)): return a == b
        case (.double(let a), .double(let b)): return a == b
        case (.string(let a), .string(let b)): return JSONKey.same(a, b)
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            let left = JSONKey.unique(a)
            let right = JSONKey.unique(b)
            guard left.count == right.count else { return false }
            let sortedLeft = left.sorted { JSONKey.codeUnitOrder($0.key, $1.key) }
            let sortedRight = right.sorted { JSONKey.codeUnitOrder($0.key, $1.key) }
            for (l, r) in zip(sortedLeft, sortedRight) {
                guard JSONKey.same(l.key, r.key), l.value == r.value else { return false }
            }
            return true
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(1); hasher.combine(b)
        case .integer(let i): hasher.combine(2); hasher.combine(i)
        case .double(let d): hasher.combine(3); hasher.combine(d)
        case .string(let s): hasher.combine(4); JSONKey.hash(s, into: &hasher)
        case .array(let a): hasher.combine(5); hasher.combine(a)
        case .object(let members):
            hasher.combine(6)
            // Order-independent: the sum of each member's own hash.
            var sum = 0
            for member in JSONKey.unique(members) {
                var memberHasher = Hasher()
                JSONKey.hash(member.key, into: &memberHasher)
                memberHasher.combine(member.value)
                sum &+= memberHasher.finalize()
            }
            hasher.combine(sum)
        }
    }
}

extension PushJSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: PushJSONValue...) { self = .array(elements) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(nilLiteral: ()) { self = .null }
    /// The members in the literal's order (a repeated key keeps its first position, last value).
    public init(dictionaryLiteral elements: (String, PushJSONValue)...) {
        self = .object(JSONKey.unique(elements.map { (key: $0.0, value: $0.1) }))
    }
}

/// Object keys as JavaScript compares them: by exact code units, never by canonical equivalence.
package enum JSONKey {
    /// Exactly the same scalars (UTF-8 bytes), unlike `String ==`.
    @inline(__always)
    package static func same(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.utf8.elementsEqual(b.utf8)
    }

    static func hash(_ s: String, into hasher: inout Hasher) {
        var s = s
        hasher.combine(s.utf8.count)
        s.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Members with each key once: a repeated key keeps its first position and its last value.
    static func unique(_ members: [(key: String, value: PushJSONValue)]) -> [(key: String, value: PushJSONValue)] {
        guard members.count > 1 else { return members }
        var result: [(key: String, value: PushJSONValue)] = []
        result.reserveCapacity(members.count)
        var index = ExactKeyIndex()
        for member in members {
            if let existing = index.position(of: member.key, in: result) {
                result[existing].value = member.value
            } else {
                index.insert(member.key, at: result.count)
                result.append(member)
            }
        }
        return result
    }

    /// JavaScript's default `Array.prototype.sort` order: UTF-16 code units. Computed on UTF-8
    /// bytes, which agree with UTF-16 order except between U+E000–U+FFFF (lead bytes EE, EF) and
    /// the astral planes (F0–F4, surrogates D800–DBFF in UTF-16): those two swap.
    static func codeUnitOrder(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { x in b.withUTF8 { y in codeUnitOrder(x, y) } }
    }

    @inline(__always)
    static func codeUnitOrder(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = min(a.count, b.count)
        var i = 0
        while i < count {
            let x = a[i]
            let y = b[i]
            if x != y {
                // Equal prefixes put both bytes at the same position in a scalar: both lead
                // bytes or both continuation bytes.
                if x >= 0xEE && y >= 0xEE {
                    let xAstral = x >= 0xF0
                    if xAstral != (y >= 0xF0) { return xAstral }
                }
                return x < y
            }
            i += 1
        }
        return a.count < b.count
    }

    /// The key as a JavaScript array index ("0" … "4294967294", canonical decimal), or nil.
    /// Such keys are enumerated first, in numeric order, by every JavaScript object.
    @inline(__always)
    static func arrayIndex(_ key: UnsafeBufferPointer<UInt8>) -> UInt32? {
        guard !key.isEmpty, key.count <= 10 else { return nil }
        if key[0] == UInt8(ascii: "0") { return key.count == 1 ? 0 : nil }
        var value: UInt64 = 0
        for byte in key {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            value = value * 10 + UInt64(byte - 0x30)
        }
        return value <= 4_294_967_294 ? UInt32(value) : nil
    }

    static func arrayIndex(_ key: String) -> UInt32? {
        var key = key
        return key.withUTF8 { arrayIndex($0) }
    }

    /// The members in JavaScript's enumeration order: array-index keys ascending, then the rest
    /// as given. `Object.entries`, `Object.keys` and `JSON.stringify` all use this order.
    package static func enumerationOrder(_ members: [(key: String, value: PushJSONValue)]) -> [(key: String, value: PushJSONValue)] {
        let unique = unique(members)
        var indexed: [(index: UInt32, member: (key: String, value: PushJSONValue))] = []
        var named: [(key: String, value: PushJSONValue)] = []
        for member in unique {
            if let index = arrayIndex(member.key) { indexed.append((index, member)) } else { named.append(member) }
        }
        guard !indexed.isEmpty else { return unique }
        indexed.sort { $0.index < $1.index }
        return indexed.map(\.member) + named
    }
}

/// Finds a key among members by exact scalars: a linear scan for small objects, a hash index
/// (by `String` hashing, then an exact check) once an object grows.
struct ExactKeyIndex {
    private static let threshold = 12
    private var table: [String: Int]?

    /// Records a new key; call after `position(of:in:)` found none.
    mutating func insert(_ key: String, at position: Int) {
        if table != nil, table?[key] == nil { table?[key] = position }
    }

    /// The position of `key` in `members`, compared exactly.
    mutating func position(of key: String, in members: [(key: String, value: PushJSONValue)]) -> Int? {
        if table == nil, members.count >= ExactKeyIndex.threshold {
            var built: [String: Int] = [:]
            for (position, member) in members.enumerated() where built[member.key] == nil { built[member.key] = position }
            table = built
        }
        if let table {
            // String hashing merges canonically equivalent keys: check the hit exactly, and scan
            // when it is an equivalent but different key.
            guard let candidate = table[key] else { return nil }
            if JSONKey.same(members[candidate].key, key) { return candidate }
        }
        for (position, member) in members.enumerated() where JSONKey.same(member.key, key) { return position }
        return nil
    }
}
