/// A JSON value small enough to serialize exactly as the JavaScript hub does.
///
/// We own this type (rather than Foundation's `JSONSerialization`) because the envelope's
/// plaintext must be byte-identical to `JSON.stringify` of recursively key-sorted objects, and
/// because Foundation blurs booleans and numbers on Linux.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A whole number, written without a fraction.
    case integer(Int64)
    /// Any other number, written as JavaScript's `Number.prototype.toString` would.
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

extension JSONValue {
    /// The string payload when this is a string, otherwise nil.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The members when this is an object, otherwise nil.
    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The elements when this is an array, otherwise nil.
    public var arrayValue: [JSONValue]? {
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

    /// The member whose key is exactly `key`, byte for byte, as JavaScript looks it up (Swift's
    /// `==` would also match a canonically equivalent key such as one with a Kelvin sign).
    public subscript(key: String) -> JSONValue? {
        guard let object = objectValue, let index = object.index(forKey: key),
            object.keys[index].utf8.elementsEqual(key.utf8)
        else { return nil }
        return object.values[index]
    }

    /// Whether JavaScript holds `value` exactly (|value| ≤ 2^53).
    public static func isSafeInteger(_ value: Int64) -> Bool {
        value.magnitude <= 1 << 53
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var object: [String: JSONValue] = [:]
        for (key, value) in elements { object[key] = value }
        self = .object(object)
    }
}
