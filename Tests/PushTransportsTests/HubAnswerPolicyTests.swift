import PushProviders
import Testing

@testable import PushHTTP
@testable import PushTransports

/// The hub's policy on what a provider said: prune only on a dead token, retry only what may
/// pass or provably never arrived. The parsers only read (`AnswerParserTests`); these rows are
/// the hub's decisions on the same answers.
@Suite struct HubAnswerPolicyTests {
    @Test func everyReadingHasOneOutcomeAndOneRetryDecision() {
        let rows: [(ProviderAnswer.Said, PushDeliveryOutcome, Bool)] = [
            (.accepted, .sent, false),
            (.tokenDead(since: 5), .invalid, false),
            (.providerTokenExpired, .failed, false),
            (.throttled, .failed, true),
            (.providerTokenUpdatesThrottled, .failed, false),
            (.unavailable, .failed, true),
            (.refused, .failed, false),
            (.unanswered(notProcessed: true), .failed, true),
            (.unanswered(notProcessed: false), .failed, false),
        ]
        for (said, outcome, retries) in rows {
            let answer = ProviderAnswer(said, status: 500)
            #expect(HubAnswerPolicy.outcome(answer) == outcome, "\(said)")
            #expect(HubAnswerPolicy.mayRetry(answer) == retries, "\(said)")
        }
        #expect(HubAnswerPolicy.invalidSince(ProviderAnswer(.tokenDead(since: 5), status: 410)) == 5)
        #expect(HubAnswerPolicy.invalidSince(ProviderAnswer(.refused, status: 410)) == nil)
    }

    typealias Row = (status: Int, body: String, outcome: PushDeliveryOutcome, retries: Bool)

    @Test func providerAnswersAsTheHubActsOnThem() {
        let apns: [Row] = [
            (200, "", .sent, false),
            (410, #"{"reason":"Unregistered","timestamp":1700000000000}"#, .invalid, false),
            (410, "", .failed, false),
            (400, #"{"reason":"BadDeviceToken"}"#, .invalid, false),
            (403, #"{"reason":"ExpiredProviderToken"}"#, .failed, false),
            (429, #"{"reason":"TooManyProviderTokenUpdates"}"#, .failed, false),
            (429, #"{"reason":"TooManyRequests"}"#, .failed, true),
            (500, #"{"reason":"ExpiredProviderToken"}"#, .failed, true),
            (503, "<html>busy</html>", .failed, true),
        ]
        for row in apns { check(APNsProvider.parse(status: row.status, body: Array(row.body.utf8)), row) }
        let fcm: [Row] = [
            (404, #"{"error":{"code":404,"status":"UNREGISTERED"}}"#, .invalid, false),
            // Evidence the relay answers on, but no proof for the hub at 400.
            (400, #"{"error":{"code":400,"status":"UNREGISTERED"}}"#, .failed, false),
            (429, #"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}"#, .failed, true),
            (500, #"{"error":{"code":500,"status":"INTERNAL"}}"#, .failed, true),
            (502, "<html>bad gateway</html>", .failed, false),
            (503, #"{"error":{"code":503,"status":"UNAVAILABLE"}}"#, .failed, true),
        ]
        for row in fcm { check(FCMProvider.parse(status: row.status, body: Array(row.body.utf8)), row) }
        let relay: [Row] = [
            (410, #"{"ok":false,"code":"unregistered"}"#, .invalid, false),
            (501, #"{"ok":false,"code":"unsupported_platform"}"#, .failed, false),
            (502, #"{"ok":false,"code":"upstream"}"#, .failed, true),
            (429, #"{"ok":false,"code":"rate_limited"}"#, .failed, true),
        ]
        for row in relay { check(RelayProvider.parse(status: row.status, body: Array(row.body.utf8)), row) }
        let webPush: [Row] = [(201, "", .sent, false), (404, "", .invalid, false), (410, "", .invalid, false), (413, "", .failed, false),
            (501, "", .failed, false), (503, "", .failed, true)]
        for row in webPush { check(WebPushProvider.parse(status: row.status, body: Array(row.body.utf8)), row) }
    }

    /// Only a failure that proves the request never reached the provider is sent again.
    @Test func networkFailuresRetryOnlyWhenNothingArrived() {
        let retried: [HTTPClientError.Code] = [.dnsFailure, .connectionRefused, .tlsFailure, .streamRefused]
        let kept: [HTTPClientError.Code] = [.timeout, .connectionLost, .cancelled, .shutdown, .responseTooLarge, .badResponse, .proxyRefused]
        for code in retried { #expect(HubAnswerPolicy.mayRetry(HTTPClientError(code).unanswered), "\(code)") }
        for code in kept { #expect(!HubAnswerPolicy.mayRetry(HTTPClientError(code).unanswered), "\(code)") }
    }

    func check(_ answer: ProviderAnswer, _ row: Row, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(HubAnswerPolicy.outcome(answer) == row.outcome, "\(row.status) \(row.body)", sourceLocation: sourceLocation)
        #expect(HubAnswerPolicy.mayRetry(answer) == row.retries, "\(row.status) \(row.body)", sourceLocation: sourceLocation)
    }
}
