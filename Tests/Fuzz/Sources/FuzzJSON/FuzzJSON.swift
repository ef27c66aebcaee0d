import FuzzCheck
import PushEnvelope

/// Any text the parser accepts must survive the canonical serializer: parse(serialize(x)) == x
/// (less the `__proto__` members the JavaScript canonicalizer drops), and serializing again
/// gives the same bytes (so nothing is normalized only the second time).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let value = try? JSONParser.parse(Array(UnsafeBufferPointer(start: data, count: size))) else { return 0 }
    let serialized = value.canonicalBytes
    let reparsed: JSONValue
    do {
        reparsed = try JSONParser.parse(serialized)
    } catch {
        violated("canonical output does not parse (\(error)): \(String(decoding: serialized, as: UTF8.self))")
    }
    require(reparsed == withoutProto(value), "parse(serialize(x)) != x: \(value) became \(reparsed)")
    require(reparsed.canonicalBytes == serialized, "serialization is not idempotent for \(value)")
    return 0
}

/// `value` with every `__proto__` member removed, at any depth.
func withoutProto(_ value: JSONValue) -> JSONValue {
    switch value {
    case .array(let elements): return .array(elements.map(withoutProto))
    case .object(let members):
        return .object(members.filter { !$0.key.utf8.elementsEqual("__proto__".utf8) }.map { (key: $0.key, value: withoutProto($0.value)) })
    default: return value
    }
}
