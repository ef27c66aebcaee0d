import PushEnvelope
import PushLoopbackServer
import PushSync
import PushTestSupport
import Testing

@testable import PushHTTP
@testable import PushTransports

@Suite struct RelayTransportTests {
    @Test func iosRequestIsExact() async throws {
        let stand = try StandIn()
        let relay = RelayTransport(baseURL: stand.server.baseURL + "//", client: stand.client)
        let results = await relay.send([envelopeDelivery(.ios, envelope: "ZW52ZWxvcGU=")])
        await stand.shutdown()
        #expect(results.map(\.outcome) == [.sent])
        let request = try #require(stand.server.requests.first)
        #expect(request.method == "POST")
        #expect(request.path == "/v1/push")
        #expect(request.httpVersion == 2)
        #expect(request.regularHeaders["content-type"] == "application/json")
        #expect(request.regularHeaders["authorization"] == nil)
        #expect(
            request.bodyString
                == #"{"platform":"ios","token":"\#(sampleIOSToken)","envelope":"ZW52ZWxvcGU=","collapseId":"ready-s1","priority":10}"#)
    }

    @Test func androidRequestHasNoCollapseId() async throws {
        let stand = try StandIn()
        let relay = RelayTransport(baseURL: stand.server.baseURL, client: stand.client)
        _ = await relay.send([envelopeDelivery(.androidPhone, token: "fcm:Token_1", envelope: "QUJD", priority: .normal)])
        await stand.shutdown()
        let request = try #require(stand.server.requests.first)
        #expect(request.bodyString == #"{"platform":"android","token":"fcm:Token_1","envelope":"QUJD","priority":5}"#)
    }

    @Test(arguments: [
        (200, #"{"ok":true}"#, PushDeliveryOutcome.sent, nil as String?),
        (410, #"{"ok":false,"code":"unregistered"}"#, .invalid, "unregistered"),
        (410, "Gone", .failed, "http_410"),
        (400, #"{"ok":false,"code":"bad_request","message":"token must be hex"}"#, .failed, "bad_request: token must be hex"),
        (413, #"{"ok":false,"code":"too_large"}"#, .failed, "too_large"),
        (429, #"{"ok":false,"code":"rate_limited"}"#, .failed, "rate_limited"),
        (501, #"{"ok":false,"code":"unsupported_platform"}"#, .failed, "unsupported_platform"),
        (502, #"{"ok":false,"code":"upstream","message":"Firebase project mismatch"}"#, .failed, "upstream: Firebase project mismatch"),
        (500, "internal error", .failed, "http_500"),
        (404, "", .failed, "http_404"),
    ])
    func answersAreClassified(_ status: Int, _ body: String, _ outcome: PushDeliveryOutcome, _ reason: String?) async throws {
        let stand = try StandIn { _ in .text(status: status, body) }
        let relay = RelayTransport(baseURL: stand.server.baseURL, client: stand.client)
        let result = try #require(await relay.send([envelopeDelivery()]).first)
        await stand.shutdown()
        #expect(result.outcome == outcome)
        #expect(result.reasonText == reason)
        #expect(result.status == status)
        #expect(result.attempts == 1)
    }

    @Test func oversizedEnvelopeIsRefusedLocally() async throws {
        let stand = try StandIn()
        let relay = RelayTransport(baseURL: stand.server.baseURL, client: stand.client)
        let exact = String(repeating: "A", count: 3200)
        let over = String(repeating: "A", count: 3201)
        let results = await relay.send([envelopeDelivery(envelope: exact), envelopeDelivery(envelope: over)])
        await stand.shutdown()
        #expect(results.map(\.outcome) == [.sent, .failed])
        #expect(results[1].reasonText == "too_large")
        #expect(stand.server.requests.count == 1)
    }

    @Test func networkFailuresAreFailedNeverInvalid() async throws {
        let stand = try StandIn(timeout: .milliseconds(500)) { request in
            switch request.regularHeaders["content-type"] {
            default: return .action(.neverRespond)
            }
        }
        let relay = RelayTransport(baseURL: stand.server.baseURL, client: stand.client)
        let timedOut = try #require(await relay.send([envelopeDelivery()]).first)
        #expect(timedOut.outcome == .failed)
        #expect(timedOut.reasonText == "timeout")
        stand.server.respond { _ in .action(.dropConnection) }
        let dropped = try #require(await relay.send([envelopeDelivery()]).first)
        #expect(dropped.outcome == .failed)
        stand.server.respond { _ in .json(#"{"ok":true}"#) }
        #expect(await relay.send([envelopeDelivery()]).first?.outcome == .sent)
        await stand.shutdown()
        let refused = RelayTransport(baseURL: "https://127.0.0.1:1", client: try HTTPClient())
        let result = try #require(await refused.send([envelopeDelivery()]).first)
        #expect(result.outcome == .failed)
        #expect(result.reasonText == "connection_refused")
    }

    @Test func wearCannotUseTheRelay() async throws {
        let stand = try StandIn()
        let relay = RelayTransport(baseURL: stand.server.baseURL, client: stand.client)
        let result = try #require(await relay.send([envelopeDelivery(.wear, token: "w")]).first)
        await stand.shutdown()
        #expect(result.outcome == .failed)
        #expect(stand.server.requests.isEmpty)
    }

    @Test func retryPolicyRetriesTransientAnswersOnly() async throws {
        let stand = try StandIn { request in
            _ = request
            return .text(status: 503, #"{"ok":false,"code":"upstream"}"#)
        }
        let policy = PushRetryPolicy(maximumAttempts: 3, initialBackoff: .milliseconds(10), maximumBackoff: .milliseconds(20))
        let relay = RelayTransport(baseURL: stand.server.baseURL, client: stand.client, retryPolicy: policy)
        let failed = try #require(await relay.send([envelopeDelivery()]).first)
        #expect(failed.attempts == 3)
        #expect(stand.server.requests.count == 3)
        stand.server.clearRequests()
        stand.server.respond { _ in .text(status: 410, #"{"ok":false,"code":"unregistered"}"#) }
        let dead = try #require(await relay.send([envelopeDelivery()]).first)
        #expect(dead.outcome == .invalid)
        #expect(dead.attempts == 1)
        stand.server.clearRequests()
        stand.server.respond { _ in .text(status: 429, #"{"ok":false,"code":"rate_limited"}"#).adding(header: "retry-after", "1") }
        let clock = ContinuousClock()
        let start = clock.now
        let limited = try #require(await relay.send([envelopeDelivery()]).first)
        #expect(limited.attempts == 3)
        #expect(clock.now - start >= .seconds(2))
        await stand.shutdown()
    }

    @Test func aRefusedStreamIsSentOnceMoreWhateverThePolicy() async throws {
        // REFUSED_STREAM (or a stream above a GOAWAY's last one) was not processed, and the HTTP
        // client resends nothing: ProviderCall sends it again once, even with no retry policy.
        let seen = Locked(0)
        let stand = try StandIn { _ in
            let n = seen.withLock {
                $0 += 1
                return $0
            }
            return n == 1 ? .action(.resetStream(errorCode: 7)) : .json(#"{"ok":true}"#)
        }
        let relay = RelayTransport(baseURL: stand.server.baseURL, client: stand.client)
        let resent = try #require(await relay.send([envelopeDelivery()]).first)
        #expect(resent.outcome == .sent)
        #expect(resent.attempts == 2)
        stand.server.respond { _ in
            seen.withLock { $0 += 1 }
            return .action(.resetStream(errorCode: 7))
        }
        let refused = try #require(await relay.send([envelopeDelivery()]).first)
        await stand.shutdown()
        #expect(refused.outcome == .failed, "refused twice: never a verdict on the token")
        #expect(refused.reasonText == "stream_refused")
        #expect(refused.attempts == 2)
        #expect(seen.withLock { $0 } == 4)
    }

    @Test func theRefusedStreamsResendIsNotOneOfThePolicysAttempts() async throws {
        // Refused, then 503, then 200: with a policy of 2 attempts, the 503 still gets its retry.
        let seen = Locked(0)
        let stand = try StandIn { _ in
            let n = seen.withLock {
                $0 += 1
                return $0
            }
            switch n {
            case 1: return .action(.resetStream(errorCode: 7))
            case 2: return .text(status: 503, #"{"ok":false,"code":"upstream"}"#)
            default: return .json(#"{"ok":true}"#)
            }
        }
        let policy = PushRetryPolicy(maximumAttempts: 2, initialBackoff: .milliseconds(10), maximumBackoff: .milliseconds(20))
        let relay = RelayTransport(baseURL: stand.server.baseURL, client: stand.client, retryPolicy: policy)
        let result = try #require(await relay.send([envelopeDelivery()]).first)
        await stand.shutdown()
        #expect(result.outcome == .sent)
        #expect(result.attempts == 3)
    }

    @Test func logsCarryTheFingerprintNeverTheToken() async throws {
        let stand = try StandIn()
        let logger = CapturingLogger()
        let relay = RelayTransport(baseURL: stand.server.baseURL, client: stand.client, logger: logger)
        _ = await relay.send([envelopeDelivery(envelope: "c2VjcmV0")])
        await stand.shutdown()
        let record = try #require(logger.all.first)
        #expect(record.tokenHash == TokenFingerprint.of(sampleIOSToken))
        #expect(record.transport == .relay)
        #expect(record.platform == "ios")
        #expect(!record.description.contains(sampleIOSToken))
        #expect(!record.description.contains("c2VjcmV0"))
    }
}
