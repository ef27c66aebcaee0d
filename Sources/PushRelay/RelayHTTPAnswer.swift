import PushEnvelope
import PushProviders

/// One complete answer of the relay's HTTP server: status, content type and body. Every body
/// is built here, so the wire contract (docs/wire.md, "The relay's answers") lives in one file.
struct RelayHTTPAnswer: Sendable, Equatable {
    var status: Int
    var contentType: String
    var body: [UInt8]
    /// `ok` or the error's `code`: what log lines and metrics call the outcome.
    var outcome: String

    /// The `code` of an error answer: the contract's, which the hub's relay client reads too.
    typealias Code = RelayProvider.ErrorCode

    static let json = "application/json"

    /// `200 {"ok":true}`: accepted by APNs or FCM (not a delivery receipt).
    static let accepted = RelayHTTPAnswer(status: 200, contentType: json, body: Array(#"{"ok":true}"#.utf8), outcome: "ok")

    /// `{"ok":false,"code":"<code>"}`, with `"message"` after the code when one is given.
    static func error(_ status: Int, _ code: Code, message: String? = nil) -> RelayHTTPAnswer {
        var text = #"{"ok":false,"code":""# + code.rawValue + #"""#
        if let message { text += #","message":"# + JSONValue.string(message).canonicalString }
        return RelayHTTPAnswer(status: status, contentType: json, body: Array((text + "}").utf8), outcome: code.rawValue)
    }

    static func badRequest(_ message: String) -> RelayHTTPAnswer { error(400, .badRequest, message: message) }
    static let unregistered = error(410, .unregistered)
    static let rateLimited = error(429, .rateLimited)
    static let upstream = error(502, .upstream)
    static let notFound = error(404, .notFound)
    static let methodNotAllowed = error(405, .methodNotAllowed)

    /// `GET /health`: the service, not provider authorization or delivery.
    static func health(version: String) -> RelayHTTPAnswer {
        let text = #"{"status":"ok","service":"hapi-push-relay","version":"# + JSONValue.string(version).canonicalString + "}"
        return RelayHTTPAnswer(status: 200, contentType: json, body: Array(text.utf8), outcome: "ok")
    }
}
