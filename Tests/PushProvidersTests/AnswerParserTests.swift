import PushEnvelope
import Testing

@testable import PushProviders

/// Every provider answer docs/wire.md lists (and the harness scenarios send), read by the one
/// parser both the hub and the relay use: what the provider said, reason, detail, and the token
/// evidence the relay answers on. What the hub makes of it is `HubAnswerPolicyTests`.
@Suite struct AnswerParserTests {
    typealias Row = (status: Int, body: String, said: ProviderAnswer.Said, reason: String?, evidence: ProviderAnswer.TokenEvidence.Kind?)

    static let apns: [Row] = [
        (200, "", .accepted, nil, nil),
        (410, #"{"reason":"Unregistered","timestamp":1700000000000}"#, .tokenDead(since: 1_700_000_000_000), "Unregistered", .unregistered),
        (410, #"{"reason":"ExpiredToken"}"#, .tokenDead(since: nil), "ExpiredToken", .expired),
        (410, "", .refused, "http_410", nil),
        (400, #"{"reason":"BadDeviceToken"}"#, .tokenDead(since: nil), "BadDeviceToken", .malformed),
        (400, #"{"reason":"BadCollapseId"}"#, .refused, "BadCollapseId", nil),
        (400, #"{"reason":"DeviceTokenNotForTopic"}"#, .refused, "DeviceTokenNotForTopic", nil),
        (400, #"{"reason":"BadTopic"}"#, .refused, "BadTopic", nil),
        (403, #"{"reason":"ExpiredProviderToken"}"#, .providerTokenExpired, "ExpiredProviderToken", nil),
        // Only Apple's 403 asks for a fresh provider token; the reason at another status is a refusal.
        (400, #"{"reason":"ExpiredProviderToken"}"#, .refused, "ExpiredProviderToken", nil),
        (500, #"{"reason":"ExpiredProviderToken"}"#, .unavailable, "ExpiredProviderToken", nil),
        (403, #"{"reason":"InvalidProviderToken"}"#, .refused, "InvalidProviderToken", nil),
        (403, #"{"reason":"BadCertificateEnvironment"}"#, .refused, "BadCertificateEnvironment", nil),
        (413, #"{"reason":"PayloadTooLarge"}"#, .refused, "PayloadTooLarge", nil),
        (429, #"{"reason":"TooManyProviderTokenUpdates"}"#, .providerTokenUpdatesThrottled, "TooManyProviderTokenUpdates", nil),
        (429, #"{"reason":"TooManyRequests"}"#, .throttled, "TooManyRequests", nil),
        (429, "", .throttled, "http_429", nil),
        (500, #"{"reason":"InternalServerError"}"#, .unavailable, "InternalServerError", nil),
        (503, #"{"reason":"ServiceUnavailable"}"#, .unavailable, "ServiceUnavailable", nil),
        (503, "<html>busy</html>", .unavailable, "http_503", nil),
    ]

    @Test func apnsAnswers() {
        for row in Self.apns {
            let answer = APNsProvider.parse(status: row.status, body: Array(row.body.utf8))
            Self.check(answer, row)
        }
    }

    @Test func apnsKeepsTheIdAndRetryAfter() {
        let headers = ["apns-id": "7C3A8F0E-0000-4000-8000-000000000001", "retry-after": " 7 "]
        let accepted = APNsProvider.parse(status: 200, body: []) { headers[$0] }
        #expect(accepted.apnsId == "7C3A8F0E-0000-4000-8000-000000000001")
        let busy = APNsProvider.parse(status: 503, body: []) { headers[$0] }
        #expect(busy.retryAfter == .seconds(7))
        #expect(busy.apnsId == nil)
    }

    static func fcmError(_ status: Int, _ googleStatus: String, errorCode: String? = nil, field: String? = nil, message: String = "m") -> String {
        var details: [String] = []
        if let errorCode { details.append(#"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(errorCode)"}"#) }
        if let field {
            details.append(#"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"\#(field)","description":"bad"}]}"#)
        }
        return #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(googleStatus)","details":[\#(details.joined(separator: ","))]}}"#
    }

    static let fcm: [Row] = [
        (200, #"{"name":"projects/p/messages/1"}"#, .accepted, nil, nil),
        (404, fcmError(404, "NOT_FOUND", errorCode: "UNREGISTERED"), .tokenDead(since: nil), "UNREGISTERED", .unregistered),
        (404, #"{"error":{"code":404,"status":"UNREGISTERED"}}"#, .tokenDead(since: nil), "UNREGISTERED", .unregistered),
        // Not proof for the hub at another status, but evidence the relay answers on.
        (400, fcmError(400, "UNREGISTERED"), .refused, "UNREGISTERED", .unregistered),
        (400, fcmError(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", field: "message.token"), .tokenDead(since: nil), "INVALID_ARGUMENT", .malformed),
        (400, fcmError(400, "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token"), .tokenDead(since: nil), "INVALID_ARGUMENT", .described),
        (400, fcmError(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", field: "message.android.restricted_package_name"), .refused, "INVALID_ARGUMENT", nil),
        (404, fcmError(404, "NOT_FOUND"), .refused, "NOT_FOUND", nil),
        (401, fcmError(401, "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR"), .refused, "THIRD_PARTY_AUTH_ERROR", nil),
        (403, fcmError(403, "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH"), .refused, "SENDER_ID_MISMATCH", nil),
        (429, fcmError(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED"), .throttled, "QUOTA_EXCEEDED", nil),
        (500, fcmError(500, "INTERNAL", errorCode: "INTERNAL"), .unavailable, "INTERNAL", nil),
        (503, fcmError(503, "UNAVAILABLE", errorCode: "UNAVAILABLE"), .unavailable, "UNAVAILABLE", nil),
        (502, "<html>bad gateway</html>", .refused, "http_502", nil),
    ]

    @Test func fcmAnswers() {
        for row in Self.fcm {
            Self.check(FCMProvider.parse(status: row.status, body: Array(row.body.utf8)), row)
        }
        let invalid = FCMProvider.parse(status: 400, body: Array(Self.fcmError(400, "INVALID_ARGUMENT", field: "message.token").utf8))
        #expect(invalid.reasonText == "INVALID_ARGUMENT: invalid registration token")
        let notFound = FCMProvider.parse(status: 404, body: Array(#"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#.utf8))
        #expect(notFound.reasonText == "NOT_FOUND: Requested entity was not found.")
    }

    static let relay: [Row] = [
        (200, #"{"ok":true}"#, .accepted, nil, nil),
        (410, #"{"ok":false,"code":"unregistered"}"#, .tokenDead(since: nil), "unregistered", .unregistered),
        (410, "Gone", .refused, "http_410", nil),
        (400, #"{"ok":false,"code":"bad_request","message":"token must be hex"}"#, .refused, "bad_request", nil),
        (413, #"{"ok":false,"code":"too_large"}"#, .refused, "too_large", nil),
        (501, #"{"ok":false,"code":"unsupported_platform"}"#, .refused, "unsupported_platform", nil),
        (429, #"{"ok":false,"code":"rate_limited"}"#, .throttled, "rate_limited", nil),
        (502, #"{"ok":false,"code":"upstream"}"#, .unavailable, "upstream", nil),
        (503, "", .unavailable, "http_503", nil),
    ]

    @Test func relayAnswers() {
        for row in Self.relay {
            Self.check(RelayProvider.parse(status: row.status, body: Array(row.body.utf8)), row)
        }
        #expect(RelayProvider.parse(status: 400, body: Array(#"{"ok":false,"code":"bad_request","message":"token must be hex"}"#.utf8)).reasonText
            == "bad_request: token must be hex")
    }

    /// Codes and messages are capped, escaped and scrubbed; the raw code stays for a caller
    /// with its own stricter rules (the relay's log).
    @Test func providerWordsAreSanitizedButDecisionsReadThemAsSent() {
        let long = String(repeating: "x", count: 300)
        let answer = APNsProvider.parse(status: 400, body: Array(#"{"reason":"Bad\r\n\#(long)"}"#.utf8))
        #expect(answer.reason?.rawValue.hasPrefix(#"Bad\r\n"#) == true)
        #expect((answer.reason?.rawValue.count ?? 0) <= 70)
        #expect(answer.code == "Bad\r\n" + long)
        #expect(APNsProvider.parse(status: 410, body: Array(#"{"reason":"Unregistered "}"#.utf8)).said == .refused)
    }

    @Test func anUnansweredRequestSaysWhetherItWasProcessed() {
        let timeout = ProviderAnswer.unanswered(.timeout, notProcessed: false)
        #expect(timeout.status == nil && timeout.reasonText == "timeout" && timeout.said == .unanswered(notProcessed: false))
    }

    @Test func retryAfterIsDelaySeconds() {
        #expect(ProviderText.retryAfter("120") == .seconds(120))
        #expect(ProviderText.retryAfter("\t3 ") == .seconds(3))
        #expect(ProviderText.retryAfter("99999") == .seconds(3600))
        #expect(ProviderText.retryAfter("-1") == nil)
        #expect(ProviderText.retryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == nil)
        #expect(ProviderText.retryAfter(nil) == nil)
    }

    static func check(_ answer: ProviderAnswer, _ row: Row, sourceLocation: SourceLocation = #_sourceLocation) {
        let label = "\(row.status) \(row.body)"
        #expect(answer.said == row.said, "\(label)", sourceLocation: sourceLocation)
        #expect(answer.reason?.rawValue == row.reason, "\(label)", sourceLocation: sourceLocation)
        #expect(answer.evidence?.kind == row.evidence, "\(label)", sourceLocation: sourceLocation)
        #expect(answer.status == row.status, "\(label)", sourceLocation: sourceLocation)
    }
}
