import PushEnvelope

/// Why a register or unregister body was refused: every failing field with a human-readable
/// message, in the JavaScript hub's 400 shape
/// `{"error":"Invalid body","issues":{"fieldErrors":{"<field>":["<message>"]}}}`.
public struct RegistrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Field name → messages, in the order found. `_body` is used when the body itself is wrong.
    public let fieldErrors: [String: [String]]

    public init(fieldErrors: [String: [String]]) {
        self.fieldErrors = fieldErrors
    }

    /// The HTTP status a hub answers with.
    public var httpStatus: Int { 400 }

    /// The JSON body a hub answers with.
    public var responseBody: String {
        let errors = JSONValue.object(fieldErrors.mapValues { .array($0.map { .string($0) }) })
        return JSONValue.object(["error": "Invalid body", "issues": .object(["fieldErrors": errors])]).canonicalString
    }

    public var description: String {
        fieldErrors.keys.sorted().map { "\($0): \(fieldErrors[$0, default: []].joined(separator: "; "))" }.joined(separator: "\n")
    }

    /// Accumulates messages so a client learns every problem in one round trip.
    struct FieldIssues {
        private(set) var errors: [String: [String]] = [:]
        var isEmpty: Bool { errors.isEmpty }
        mutating func add(_ field: String, _ message: String) { errors[field, default: []].append(message) }
    }
}
