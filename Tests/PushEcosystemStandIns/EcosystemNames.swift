/// Small stand-ins for the generic names a Swift server hub imports beside us: AsyncHTTPClient's
/// `HTTPClient` and `HTTPClientError`, NIOHTTP1's `HTTPHeaders`, swift-crypto's `Digest`, and
/// the kind of `Base64`, `JSONValue`, `JSONParser` and `Locked` a hub (or one of its packages)
/// defines for itself. `PushEmbeddingTests` imports this module next to `PushNative` and uses
/// every one of them unqualified: if `PushNative` exported a type of the same name, that test
/// would not compile.

public struct HTTPHeaders: Sendable, Equatable {
    public private(set) var fields: [(String, String)] = []
    public init() {}
    public mutating func add(name: String, value: String) { fields.append((name, value)) }
    public subscript(name: String) -> [String] { fields.filter { $0.0 == name }.map(\.1) }
    public static func == (a: HTTPHeaders, b: HTTPHeaders) -> Bool { a.fields.elementsEqual(b.fields) { $0 == $1 } }
}

public struct HTTPClientError: Error, Sendable, Equatable {
    public let code: String
    public static let deadlineExceeded = HTTPClientError(code: "deadlineExceeded")
}

public final class HTTPClient: Sendable {
    public init() {}
    public func execute(method: String, url: String, headers: HTTPHeaders) async throws -> Int {
        guard url.hasPrefix("https://") else { throw HTTPClientError.deadlineExceeded }
        return 200
    }
}

/// swift-crypto's `Digest` is a protocol; so is this one.
public protocol Digest: Sendable {
    var bytes: [UInt8] { get }
}

public struct StandInSHA256Digest: Digest {
    public let bytes: [UInt8]
    public init(bytes: [UInt8]) { self.bytes = bytes }
}

public enum Base64 {
    public static func encode(_ bytes: [UInt8]) -> String { "stand-in:\(bytes.count)" }
}

public indirect enum JSONValue: Sendable, Equatable {
    case null
    case string(String)
    case array([JSONValue])
}

public enum JSONParser {
    public static func parse(_ text: String) -> JSONValue { text == "null" ? .null : .string(text) }
}

public final class Locked<Value: Sendable>: @unchecked Sendable {
    private var value: Value
    public init(_ value: Value) { self.value = value }
    public func get() -> Value { value }
}
