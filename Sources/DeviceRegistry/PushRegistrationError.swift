import PushEnvelope

/// Why a register or unregister body was refused, in the JavaScript hub's 400 shape (zod's
/// flattened error): `{"error":"Invalid body","issues":{"formErrors":[…],"fieldErrors":{…}}}`,
/// body-level problems in `formErrors`, one entry per failing field in the order the problems
/// were found (schema order: `token`, `platform`, `deviceId`, `pushKey`).
public struct PushRegistrationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Problems with the body as a whole ("expected object, received null").
    public let formErrors: [String]
    /// Each failing field with its messages, in the order found.
    public let orderedFieldErrors: [(field: String, messages: [String])]

    public init(formErrors: [String] = [], orderedFieldErrors: [(field: String, messages: [String])]) {
        self.formErrors = formErrors
        self.orderedFieldErrors = orderedFieldErrors
    }

    /// Field name → messages; fields in name order when the dictionary is all there is.
    public init(fieldErrors: [String: [String]]) {
        self.init(orderedFieldErrors: fieldErrors.keys.sorted().map { (field: $0, messages: fieldErrors[$0] ?? []) })
    }

    /// Field name → messages (see `orderedFieldErrors` for the order).
    public var fieldErrors: [String: [String]] {
        var errors: [String: [String]] = [:]
        for entry in orderedFieldErrors { errors[entry.field, default: []] += entry.messages }
        return errors
    }

    /// The HTTP status a hub answers with.
    public var httpStatus: Int { 400 }

    /// The JSON body a hub answers with, byte for byte the JavaScript hub's.
    public var responseBody: String {
        let fields = JSONValue.object(orderedFieldErrors.map { (key: $0.field, value: .array($0.messages.map { .string($0) })) })
        let body: JSONValue = [
            "error": "Invalid body", "issues": ["formErrors": .array(formErrors.map { .string($0) }), "fieldErrors": fields],
        ]
        return body.javaScriptString
    }

    public var description: String {
        (formErrors + orderedFieldErrors.map { "\($0.field): \($0.messages.joined(separator: "; "))" }).joined(separator: "\n")
    }

    public static func == (lhs: PushRegistrationError, rhs: PushRegistrationError) -> Bool {
        lhs.formErrors == rhs.formErrors && lhs.orderedFieldErrors.map(\.field) == rhs.orderedFieldErrors.map(\.field)
            && lhs.orderedFieldErrors.map(\.messages) == rhs.orderedFieldErrors.map(\.messages)
    }

    /// Accumulates messages in the order found, so a client learns every problem in one round trip.
    struct FieldIssues {
        private(set) var formErrors: [String] = []
        private(set) var fields: [(field: String, messages: [String])] = []
        var isEmpty: Bool { formErrors.isEmpty && fields.isEmpty }
        mutating func addForm(_ message: String) { formErrors.append(message) }
        mutating func add(_ field: String, _ message: String) {
            if let index = fields.firstIndex(where: { $0.field == field }) {
                fields[index].messages.append(message)
            } else {
                fields.append((field: field, messages: [message]))
            }
        }
        func has(_ field: String) -> Bool { fields.contains { $0.field == field } }
        var error: PushRegistrationError { PushRegistrationError(formErrors: formErrors, orderedFieldErrors: fields) }
    }
}
