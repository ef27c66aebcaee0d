import PushEnvelope
import PushLoopbackServer
import PushTestSupport
import PushSync
import Testing

@testable import PushHTTP
@testable import PushTransports

struct APNsFixture {
    let stand: StandIn
    let keys: TestKeys.KeyPair
    let credentials: APNsCredentials
    let clock = ManualClock()
    let tokens: APNsProviderToken
    let transport: APNsTransport

    init(timeout: Duration = .seconds(3), respond: @escaping RecordingServer.Responder = { _ in .json("").adding(header: "apns-id", "ID-1") })
        throws
    {
        stand = try StandIn(timeout: timeout, respond: respond)
        keys = try #require(TestKeys.p256())
        credentials = try APNsCredentials(pem: Array(keys.privateKeyPEM.utf8), keyId: "KEYID12345", teamId: "TEAMID6789", bundleId: "run.hapi.test")
        tokens = APNsProviderToken(credentials: credentials, now: clock.now)
        transport = APNsTransport(endpoint: stand.server.baseURL, credentials: credentials, client: stand.client, providerToken: tokens)
    }
}

@Suite struct APNsTransportTests {
    @Test func requestIsExactAndTheJWTVerifies() async throws {
        let fixture = try APNsFixture()
        let results = await fixture.transport.send([envelopeDelivery(envelope: "ZW52ZWxvcGU=")])
        await fixture.stand.shutdown()
        #expect(results.first?.outcome == .sent)
        #expect(results.first?.apnsId == "ID-1")
        let request = try #require(fixture.stand.server.requests.first)
        #expect(request.method == "POST")
        #expect(request.path == "/3/device/\(sampleIOSToken)")
        #expect(request.httpVersion == 2)
        let headers = request.regularHeaders
        #expect(headers["apns-topic"] == "run.hapi.test")
        #expect(headers["apns-push-type"] == "alert")
        #expect(headers["apns-priority"] == "10")
        #expect(headers["apns-expiration"] == "0")
        #expect(headers["apns-collapse-id"] == "ready-s1")
        #expect(headers["content-type"] == "application/json")
        #expect(
            request.bodyString
                == #"{"aps":{"mutable-content":1,"alert":{"title":"HAPI","body":"New activity"},"sound":"default"},"hapi":{"v":1,"e":"ZW52ZWxvcGU="}}"#)
        let authorization = try #require(headers["authorization"])
        #expect(authorization.hasPrefix("bearer "))
        let jwt = String(authorization.dropFirst("bearer ".count))
        let verified = try #require(JWTVerifier.verify(jwt, publicKeyPEM: fixture.keys.publicKeyPEM))
        #expect(verified.header == ["alg": "ES256", "kid": "KEYID12345"])
        #expect(verified.claims == ["iss": "TEAMID6789", "iat": 1_800_000_000])
        // The JOSE signature is r‖s (64 bytes), not DER.
        #expect(JWTVerifier.base64URLDecode(String(jwt.split(separator: ".")[2]))?.count == 64)
        #expect(!jwt.contains("="))
        let other = try #require(TestKeys.p256())
        #expect(JWTVerifier.verify(jwt, publicKeyPEM: other.publicKeyPEM) == nil)
    }

    @Test func lowPriorityIsFive() async throws {
        let fixture = try APNsFixture()
        _ = await fixture.transport.send([envelopeDelivery(priority: .normal)])
        await fixture.stand.shutdown()
        #expect(fixture.stand.server.requests.first?.regularHeaders["apns-priority"] == "5")
    }

    @Test func collapseIdIsCutAt64BytesBetweenCharacters() {
        let ascii = "permission-request-" + String(repeating: "x", count: 60)
        #expect(APNsCollapseId.cut(ascii).utf8.count == 64)
        #expect(APNsCollapseId.cut("ready-s1") == "ready-s1")
        let multibyte = "ready-" + String(repeating: "é", count: 40)  // 6 + 80 bytes
        let cut = APNsCollapseId.cut(multibyte)
        #expect(cut.utf8.count == 64)
        #expect(cut == "ready-" + String(repeating: "é", count: 29))
        let emoji = "ready-" + String(repeating: "😀", count: 20)  // 4-byte characters
        #expect(APNsCollapseId.cut(emoji) == "ready-" + String(repeating: "😀", count: 14))
        #expect(APNsCollapseId.cut(emoji).utf8.count == 62)
    }

    @Test(arguments: [
        (200, "", PushDeliveryOutcome.sent, nil as String?),
        (410, #"{"reason":"Unregistered","timestamp":1700000000000}"#, .invalid, "Unregistered"),
        (410, #"{"reason":"ExpiredToken"}"#, .invalid, "ExpiredToken"),
        (410, "", .failed, "http_410"),
        (400, #"{"reason":"BadDeviceToken"}"#, .invalid, "BadDeviceToken"),
        (400, #"{"reason":"BadCollapseId"}"#, .failed, "BadCollapseId"),
        (400, #"{"reason":"DeviceTokenNotForTopic"}"#, .failed, "DeviceTokenNotForTopic"),
        (400, #"{"reason":"BadTopic"}"#, .failed, "BadTopic"),
        (403, #"{"reason":"InvalidProviderToken"}"#, .failed, "InvalidProviderToken"),
        (403, #"{"reason":"BadCertificateEnvironment"}"#, .failed, "BadCertificateEnvironment"),
        (413, #"{"reason":"PayloadTooLarge"}"#, .failed, "PayloadTooLarge"),
        (429, #"{"reason":"TooManyRequests"}"#, .failed, "TooManyRequests"),
        (429, #"{"reason":"TooManyProviderTokenUpdates"}"#, .failed, "TooManyProviderTokenUpdates"),
        (500, #"{"reason":"InternalServerError"}"#, .failed, "InternalServerError"),
        (503, #"{"reason":"ServiceUnavailable"}"#, .failed, "ServiceUnavailable"),
        (503, "<html>", .failed, "http_503"),
    ])
    func answersAreClassified(_ status: Int, _ body: String, _ outcome: PushDeliveryOutcome, _ reason: String?) async throws {
        let fixture = try APNsFixture { _ in .text(status: status, body) }
        let result = try #require(await fixture.transport.send([envelopeDelivery()]).first)
        await fixture.stand.shutdown()
        #expect(result.outcome == outcome)
        #expect(result.reasonText == reason)
        #expect(result.status == status)
        if status == 410 && outcome == .invalid && body.contains("timestamp") { #expect(result.invalidSince == 1_700_000_000_000) }
    }

    @Test func expiredProviderTokenIsRetriedOnceWithANewToken() async throws {
        let firstJWT = Locked<String?>(nil)
        let fixture = try APNsFixture { request in
            let authorization = request.header("authorization") ?? ""
            let isFirst = firstJWT.withLock { first -> Bool in
                if first == nil { first = authorization }
                return first == authorization
            }
            return isFirst ? .text(status: 403, #"{"reason":"ExpiredProviderToken"}"#) : .json("")
        }
        let result = try #require(await fixture.transport.send([envelopeDelivery()]).first)
        #expect(result.outcome == .sent)
        #expect(result.attempts == 2)
        let requests = fixture.stand.server.requests
        #expect(requests.count == 2)
        #expect(requests[0].header("authorization") != requests[1].header("authorization"))
        #expect(await fixture.tokens.mintCount == 2)
        // Rejected again: exactly one retry, then failed.
        fixture.stand.server.respond { _ in .text(status: 403, #"{"reason":"ExpiredProviderToken"}"#) }
        fixture.stand.server.clearRequests()
        let again = try #require(await fixture.transport.send([envelopeDelivery()]).first)
        await fixture.stand.shutdown()
        #expect(again.outcome == .failed)
        #expect(again.reasonText == "ExpiredProviderToken")
        #expect(fixture.stand.server.requests.count == 2)
    }

    @Test func oneTokenServesAThousandPushes() async throws {
        let fixture = try APNsFixture()
        let deliveries = (0..<1000).map { i in envelopeDelivery(token: String(repeating: "0", count: 60) + hex4(i)) }
        let results = await fixture.transport.send(deliveries)
        #expect(results.allSatisfy { $0.outcome == .sent })
        let results2 = await fixture.transport.send(Array(deliveries.prefix(10)))
        #expect(results2.count == 10)
        await fixture.stand.shutdown()
        #expect(await fixture.tokens.mintCount == 1)
        #expect(Set(fixture.stand.server.requests.map { $0.header("authorization") ?? "" }).count == 1)
        #expect(fixture.stand.server.server.connectionsAccepted == 1)
        // Every path names its own device: answers matched to requests.
        #expect(Set(fixture.stand.server.requests.map(\.path)).count == 1000)
    }

    @Test func tokenIsRefreshedAfter45MinutesOnly() async throws {
        let fixture = try APNsFixture()
        let first = try await fixture.tokens.token()
        fixture.clock.advance(44 * 60)
        #expect(try await fixture.tokens.token() == first)
        fixture.clock.advance(61)
        let second = try await fixture.tokens.token()
        #expect(second != first)
        let claims = try #require(JWTVerifier.verify(second, publicKeyPEM: fixture.keys.publicKeyPEM)?.claims)
        #expect(claims["iat"] == .integer(1_800_000_000 + 44 * 60 + 61))
        #expect(await fixture.tokens.mintCount == 2)
        await fixture.stand.shutdown()
    }

    @Test func refreshIsSingleFlightUnderConcurrentRejections() async throws {
        let rejected = Locked<String?>(nil)
        let fixture = try APNsFixture { request in
            let authorization = request.header("authorization") ?? ""
            let stale = rejected.withLock { first -> Bool in
                if first == nil { first = authorization }
                return first == authorization
            }
            return stale ? .text(status: 403, #"{"reason":"ExpiredProviderToken"}"#) : .json("")
        }
        let deliveries = (0..<100).map { i in envelopeDelivery(token: String(repeating: "b", count: 60) + hex4(i)) }
        let results = await fixture.transport.send(deliveries)
        await fixture.stand.shutdown()
        #expect(results.allSatisfy { $0.outcome == .sent })
        #expect(await fixture.tokens.mintCount == 2)
        #expect(Set(fixture.stand.server.requests.map { $0.header("authorization") ?? "" }).count == 2)
    }

    @Test func tooManyProviderTokenUpdatesNeverMints() async throws {
        let fixture = try APNsFixture { _ in .text(status: 429, #"{"reason":"TooManyProviderTokenUpdates"}"#) }
        let results = await fixture.transport.send((0..<5).map { _ in envelopeDelivery() })
        await fixture.stand.shutdown()
        #expect(results.allSatisfy { $0.outcome == .failed && $0.reasonText == "TooManyProviderTokenUpdates" })
        #expect(await fixture.tokens.mintCount == 1)
    }

    @Test func timeoutAndResetAreFailed() async throws {
        let fixture = try APNsFixture(timeout: .milliseconds(400)) { _ in .action(.neverRespond) }
        let timedOut = try #require(await fixture.transport.send([envelopeDelivery()]).first)
        #expect(timedOut.outcome == .failed)
        #expect(timedOut.reasonText == "timeout")
        fixture.stand.server.respond { _ in .action(.resetStream(errorCode: 2)) }
        let reset = try #require(await fixture.transport.send([envelopeDelivery()]).first)
        #expect(reset.outcome == .failed)
        fixture.stand.server.respond { _ in .action(.partialThenDrop(bytes: 5)) }
        let partial = try #require(await fixture.transport.send([envelopeDelivery()]).first)
        #expect(partial.outcome == .failed)
        fixture.stand.server.respond { _ in .json("") }
        #expect(await fixture.transport.send([envelopeDelivery()]).first?.outcome == .sent)
        await fixture.stand.shutdown()
    }

    @Test func nonHexTokensNeverReachTheNetwork() async throws {
        let fixture = try APNsFixture()
        let result = try #require(await fixture.transport.send([envelopeDelivery(token: "../../admin")]).first)
        await fixture.stand.shutdown()
        #expect(result.outcome == .failed)
        #expect(fixture.stand.server.requests.isEmpty)
    }
}

/// Four lowercase hex digits.
func hex4(_ value: Int) -> String {
    let hex = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 4 - hex.count)) + hex
}

@Suite struct APNsConnectionTests {
    @Test func respectsTheStreamLimitTheServerAnnounces() async throws {
        // APNs allows one stream until a provider token is accepted; the client must queue,
        // not fail, and stay on one connection.
        let server = try RecordingServer(maxConcurrentStreams: 1) { _ in .json("").delayed(milliseconds: 5) }
        let client = try HTTPClient(
            configuration: .init(additionalTrustedCAFile: server.caFile, maximumConnectionsPerHost: 1, maximumConcurrentStreamsPerConnection: 1000))
        let keys = try #require(TestKeys.p256())
        let credentials = try APNsCredentials(pem: Array(keys.privateKeyPEM.utf8), keyId: "K", teamId: "T", bundleId: "b")
        let transport = APNsTransport(endpoint: server.baseURL, credentials: credentials, client: client)
        // The first push learns the server's SETTINGS (before them a burst can race past the
        // limit, be refused and be retried on new connections: still sent, never failed).
        #expect(await transport.send([envelopeDelivery()]).first?.outcome == .sent)
        let connections = server.server.connectionsAccepted
        let results = await transport.send((0..<30).map { i in envelopeDelivery(token: String(repeating: "c", count: 60) + hex4(i)) })
        await client.shutdown()
        server.stop()
        #expect(results.allSatisfy { $0.outcome == .sent })
        #expect(server.server.connectionsAccepted == connections)
    }

    @Test func aDownEndpointIsNotHammered() async throws {
        let keys = try #require(TestKeys.p256())
        let credentials = try APNsCredentials(pem: Array(keys.privateKeyPEM.utf8), keyId: "K", teamId: "T", bundleId: "b")
        let client = try HTTPClient(configuration: .init(requestTimeout: .seconds(2)))
        let transport = APNsTransport(endpoint: "https://127.0.0.1:1", credentials: credentials, client: client)
        let first = await transport.send([envelopeDelivery()])
        #expect(first.first?.reasonText == "connection_refused")
        // Within the backoff window sends fail fast without connecting again.
        let during = await transport.send((0..<20).map { _ in envelopeDelivery() })
        #expect(during.allSatisfy { $0.outcome == .failed && $0.reasonText == "endpoint_backoff" && $0.attempts == 0 })
        await client.shutdown()
    }

    @Test func backoffWindowDoublesAndResets() {
        let backoff = EndpointBackoff(initialWindow: .seconds(1), maximumWindow: .seconds(4))
        let t0 = ContinuousClock.now
        backoff.recordConnectFailure(now: t0)
        #expect(backoff.isBackingOff(now: t0 + .milliseconds(900)))
        #expect(!backoff.isBackingOff(now: t0 + .milliseconds(1100)))
        backoff.recordConnectFailure(now: t0)
        #expect(backoff.isBackingOff(now: t0 + .milliseconds(1900)))
        for _ in 0..<10 { backoff.recordConnectFailure(now: t0) }
        #expect(!backoff.isBackingOff(now: t0 + .milliseconds(4100)))
        backoff.recordSuccess()
        #expect(!backoff.isBackingOff(now: t0))
    }
}
