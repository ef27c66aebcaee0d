import PushEnvelope
import PushHTTP
import PushLoopbackServer
import PushSync
import PushTestSupport
import PushTransports
import Testing

@testable import PushRelay

/// Every provider answer and what the hub hears from the relay: the pure mapping, then the same
/// table through the real stand-ins.
@Suite struct RelayProviderOutcomeTests {
    typealias Verdict = RelayProviderOutcome.Verdict

    static let apnsCases: [(status: Int, body: String, verdict: Verdict, relayStatus: Int, code: String?)] = [
        (200, "", .accepted, 200, nil),
        (410, #"{"reason":"Unregistered","timestamp":1700000000000}"#, .unregistered, 410, "unregistered"),
        (400, #"{"reason":"BadDeviceToken"}"#, .unregistered, 410, "unregistered"),
        // Any other 410 is not proof of a dead token, as the official relay says.
        (410, #"{"reason":"ExpiredToken"}"#, .upstream, 502, "upstream"),
        (410, "", .upstream, 502, "upstream"),
        (400, #"{"reason":"BadTopic"}"#, .upstream, 502, "upstream"),
        (400, #"{"reason":"BadCollapseId"}"#, .upstream, 502, "upstream"),
        (400, #"{"reason":"DeviceTokenNotForTopic"}"#, .upstream, 502, "upstream"),
        (403, #"{"reason":"InvalidProviderToken"}"#, .upstream, 502, "upstream"),
        (403, #"{"reason":"BadCertificateEnvironment"}"#, .upstream, 502, "upstream"),
        (413, #"{"reason":"PayloadTooLarge"}"#, .upstream, 502, "upstream"),
        (429, #"{"reason":"TooManyRequests"}"#, .rateLimited, 429, "rate_limited"),
        (429, #"{"reason":"TooManyProviderTokenUpdates"}"#, .rateLimited, 429, "rate_limited"),
        (500, #"{"reason":"InternalServerError"}"#, .upstream, 502, "upstream"),
        (503, #"{"reason":"ServiceUnavailable"}"#, .upstream, 502, "upstream"),
        (503, "<html>busy</html>", .upstream, 502, "upstream"),
    ]

    static func fcmError(_ status: Int, _ googleStatus: String, errorCode: String? = nil, field: String? = nil) -> String {
        var details: [String] = []
        if let errorCode { details.append(#"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(errorCode)"}"#) }
        if let field {
            details.append(#"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"\#(field)","description":"bad"}]}"#)
        }
        return #"{"error":{"code":\#(status),"message":"m","status":"\#(googleStatus)","details":[\#(details.joined(separator: ","))]}}"#
    }

    static let fcmCases: [(status: Int, body: String, verdict: Verdict, relayStatus: Int, code: String?)] = [
        (200, #"{"name":"projects/hapi-demo/messages/1"}"#, .accepted, 200, nil),
        (404, fcmError(404, "NOT_FOUND", errorCode: "UNREGISTERED"), .unregistered, 410, "unregistered"),
        (404, #"{"error":{"code":404,"status":"UNREGISTERED"}}"#, .unregistered, 410, "unregistered"),
        (400, fcmError(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", field: "message.token"), .unregistered, 410, "unregistered"),
        // A 400 on another field is about the message, not the token.
        (400, fcmError(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", field: "message.android.restricted_package_name"), .upstream, 502, "upstream"),
        (400, fcmError(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT"), .upstream, 502, "upstream"),
        // A Firebase project mismatch.
        (403, fcmError(403, "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH"), .upstream, 502, "upstream"),
        (401, fcmError(401, "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR"), .upstream, 502, "upstream"),
        (404, fcmError(404, "NOT_FOUND"), .upstream, 502, "upstream"),
        (429, fcmError(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED"), .rateLimited, 429, "rate_limited"),
        (500, fcmError(500, "INTERNAL", errorCode: "INTERNAL"), .upstream, 502, "upstream"),
        (503, fcmError(503, "UNAVAILABLE", errorCode: "UNAVAILABLE"), .upstream, 502, "upstream"),
        (502, "<html>bad gateway</html>", .upstream, 502, "upstream"),
    ]

    @Test func apnsAnswersMapLikeTheOfficialRelay() {
        for entry in Self.apnsCases {
            let outcome = RelayProviderOutcome.apns(status: entry.status, body: Array(entry.body.utf8))
            #expect(outcome.verdict == entry.verdict, "\(entry.status) \(entry.body)")
            #expect(outcome.answer.status == entry.relayStatus, "\(entry.status) \(entry.body)")
            #expect(outcome.providerStatus == entry.status)
        }
    }

    @Test func fcmAnswersMapLikeTheOfficialRelay() {
        for entry in Self.fcmCases {
            let outcome = RelayProviderOutcome.fcm(status: entry.status, body: Array(entry.body.utf8))
            #expect(outcome.verdict == entry.verdict, "\(entry.status) \(entry.body)")
            #expect(outcome.answer.status == entry.relayStatus, "\(entry.status) \(entry.body)")
        }
    }

    @Test func networkFailuresAreUpstream() {
        for error in [HTTPClientError.timeout, .connectionRefused, .tlsFailure, .dnsFailure, .connectionLost, .streamRefused, .other] {
            #expect(RelayProviderOutcome.network(error).verdict == .upstream)
        }
        #expect(RelayProviderOutcome.network(.timeout).reason == "timeout")
    }

    @Test func providerReasonsAreSanitizedForTheLog() {
        let outcome = RelayProviderOutcome.apns(status: 400, body: Array(#"{"reason":"Bad Topic\n<script> token=abc"}"#.utf8))
        #expect(outcome.reason == "BadTopicscripttokenabc")
        let long = RelayProviderOutcome.apns(status: 400, body: Array(#"{"reason":"\#(String(repeating: "x", count: 300))"}"#.utf8))
        #expect(long.reason?.count == 64)
    }

    @Test func everyAPNsAnswerThroughTheStandIn() async throws {
        let relay = try RelayFixture()
        for (index, entry) in Self.apnsCases.enumerated() {
            relay.providers.apns.respond { _ in .text(status: entry.status, entry.body) }
            // A fresh token each time: the per-token budget stays out of the way.
            let response = try await relay.push(iosPush(token: String(repeating: "ab", count: 31) + hex2(index)))
            #expect(response.status == entry.relayStatus, "\(entry.status) \(entry.body)")
            if let code = entry.code {
                #expect(response.text == #"{"ok":false,"code":"\#(code)"}"#, "\(entry.status) \(entry.body)")
            } else {
                #expect(response.text == #"{"ok":true}"#)
            }
        }
        await relay.stop()
        #expect(relay.apnsRequests.count == Self.apnsCases.count)
    }

    @Test func everyFCMAnswerThroughTheStandIn() async throws {
        let relay = try RelayFixture()
        for (index, entry) in Self.fcmCases.enumerated() {
            relay.providers.fcm.respond(LoopbackProviders.googleResponder { _ in .json(status: entry.status, entry.body) })
            let response = try await relay.push(androidPush(token: "fcm-token-\(index)"))
            #expect(response.status == entry.relayStatus, "\(entry.status) \(entry.body)")
            if let code = entry.code {
                #expect(response.text == #"{"ok":false,"code":"\#(code)"}"#, "\(entry.status) \(entry.body)")
            } else {
                #expect(response.text == #"{"ok":true}"#)
            }
        }
        await relay.stop()
        #expect(relay.fcmSends.count == Self.fcmCases.count)
        // FCM's 401 dropped the cached access token: the next push exchanged a new one.
        #expect(relay.providers.fcm.requests.filter { $0.path == "/token" }.count == 2)
    }

    @Test func aRefusedServiceAccountIs502() async throws {
        let relay = try RelayFixture()
        relay.providers.fcm.respond { request in
            request.path == "/token"
                ? .json(status: 400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#) : .json(#"{"name":"x"}"#)
        }
        let response = try await relay.push(androidPush())
        await relay.stop()
        #expect(response.status == 502)
        #expect(response.text == #"{"ok":false,"code":"upstream"}"#)
        #expect(relay.fcmSends.isEmpty)
        #expect(relay.log.pushLines.first?.contains("reason=oauth") == true)
    }
}
