import PushEnvelope
import PushLoopbackServer
import PushTestSupport
import PushSync
import Testing

@testable import PushHTTP
@testable import PushTransports

/// One stand-in plays Google's token endpoint (`/token`) and FCM (`/v1/projects/...`).
struct FCMFixture {
    let stand: StandIn
    let keys: TestKeys.KeyPair
    let account: FCMServiceAccount
    let clock = ManualClock()
    let tokens: FCMAccessTokenProvider
    let transport: FCMTransport

    static func google(token: @escaping @Sendable () -> LoopbackServer.Response = { .json(#"{"access_token":"ya29.test-access","expires_in":3599,"token_type":"Bearer"}"#) },
        send: @escaping RecordingServer.Responder = { _ in .json(#"{"name":"projects/private-project/messages/1"}"#) }) -> RecordingServer.Responder
    {
        { request in request.path == "/token" ? token() : send(request) }
    }

    init(timeout: Duration = .seconds(3), respond: @escaping RecordingServer.Responder = FCMFixture.google()) throws {
        stand = try StandIn(timeout: timeout, respond: respond)
        keys = try #require(TestKeys.rsa2048())
        let json = JSONValue.object([
            "type": "service_account", "project_id": "private-project", "client_email": "pusher@private-project.iam.gserviceaccount.com",
            "private_key": .string(keys.privateKeyPEM), "token_uri": .string(stand.server.baseURL + "/token"),
        ])
        account = try FCMServiceAccount(json: json.canonicalBytes)
        tokens = FCMAccessTokenProvider(account: account, client: stand.client, now: clock.now)
        transport = FCMTransport(endpoint: stand.server.baseURL, account: account, client: stand.client, accessTokens: tokens)
    }

    var sends: [LoopbackServer.Request] { stand.server.requests.filter { $0.path != "/token" } }
    var exchanges: [LoopbackServer.Request] { stand.server.requests.filter { $0.path == "/token" } }
}

func plaintextDelivery(_ target: PushDelivery.Target = .androidPhone, token: String = "fcm-token:1") -> PushDelivery {
    PushDelivery(target: target, token: token, content: .plaintext(samplePayload), collapseId: "ready-s1")
}

@Suite struct FCMTransportTests {
    @Test func oauthAssertionIsExactAndVerifies() async throws {
        let fixture = try FCMFixture()
        _ = await fixture.transport.send([plaintextDelivery()])
        await fixture.stand.shutdown()
        let exchange = try #require(fixture.exchanges.first)
        #expect(exchange.method == "POST")
        #expect(exchange.regularHeaders["content-type"] == "application/x-www-form-urlencoded")
        let form = Dictionary(uniqueKeysWithValues: exchange.bodyString.split(separator: "&").map { pair -> (String, String) in
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            return (parts[0], parts.count > 1 ? parts[1] : "")
        })
        #expect(form["grant_type"] == "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer")
        let assertion = try #require(form["assertion"])
        let verified = try #require(JWTVerifier.verify(assertion, publicKeyPEM: fixture.keys.publicKeyPEM))
        #expect(verified.header["alg"] == "RS256")
        let email = "pusher@private-project.iam.gserviceaccount.com"
        #expect(
            verified.claims == [
                "iss": .string(email), "sub": .string(email), "aud": .string(fixture.stand.server.baseURL + "/token"),
                "scope": "https://www.googleapis.com/auth/firebase.messaging", "iat": 1_800_000_000, "exp": 1_800_003_600,
            ])
        let other = try #require(TestKeys.rsa2048())
        #expect(JWTVerifier.verify(assertion, publicKeyPEM: other.publicKeyPEM) == nil)
    }

    @Test func phoneAndWearMessagesAreExact() async throws {
        let fixture = try FCMFixture()
        let results = await fixture.transport.send([plaintextDelivery(.androidPhone, token: "phone:tok"), plaintextDelivery(.wear, token: "wear:tok")])
        await fixture.stand.shutdown()
        #expect(results.map(\.outcome) == [.sent, .sent])
        let sends = fixture.sends.sorted { $0.bodyString.contains("phone:tok") && !$1.bodyString.contains("phone:tok") }
        #expect(sends.count == 2)
        for request in sends {
            #expect(request.method == "POST")
            #expect(request.path == "/v1/projects/private-project/messages:send")
            #expect(request.regularHeaders["authorization"] == "Bearer ya29.test-access")
            #expect(request.regularHeaders["content-type"] == "application/json")
        }
        // The JavaScript hub's byte order (js-hub-behaviour.md §6.2): token, data, android; data in
        // its insertion order.
        let data =
            #"{"type":"ready","sessionId":"s1","sessionName":"claude - hapi","url":"/sessions/s1","title":"Claude is ready","body":"Ready for input","contractVersion":"1","severity":"info"}"#
        #expect(sends[0].bodyString == #"{"message":{"token":"phone:tok","data":\#(data),"android":{"priority":"HIGH"}}}"#)
        #expect(
            sends[1].bodyString == #"{"message":{"token":"wear:tok","data":\#(data),"android":{"priority":"HIGH","direct_boot_ok":true}}}"#)
        for request in sends {
            #expect(!request.bodyString.contains("notification"))
            #expect(!request.bodyString.contains("collapse_key"))
        }
    }

    @Test func accessTokenIsCachedUntil60SecondsBeforeExpiry() async throws {
        let fixture = try FCMFixture()
        _ = await fixture.transport.send([plaintextDelivery()])
        _ = await fixture.transport.send([plaintextDelivery(), plaintextDelivery()])
        #expect(fixture.exchanges.count == 1)
        fixture.clock.advance(3599 - 61)
        _ = await fixture.transport.send([plaintextDelivery()])
        #expect(fixture.exchanges.count == 1)
        fixture.clock.advance(2)
        _ = await fixture.transport.send([plaintextDelivery()])
        #expect(fixture.exchanges.count == 2)
        await fixture.stand.shutdown()
    }

    @Test func concurrentCallersShareOneExchange() async throws {
        let fixture = try FCMFixture(respond: FCMFixture.google(token: {
            .json(#"{"access_token":"ya29.slow","expires_in":3599}"#).delayed(milliseconds: 200)
        }))
        let tokens = fixture.tokens
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 { group.addTask { try await tokens.token() } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        await fixture.stand.shutdown()
        #expect(Set(values) == ["ya29.slow"])
        #expect(fixture.exchanges.count == 1)
        #expect(await tokens.exchangeCount == 1)
    }

    @Test func aTokenRequestWhoseStreamWasRefusedIsSentOnceMore() async throws {
        // The HTTP client resends nothing; a refused stream was not processed, so the token
        // exchange sends it again once (and no more).
        let seen = Locked(0)
        let fixture = try FCMFixture(respond: FCMFixture.google(token: {
            let n = seen.withLock {
                $0 += 1
                return $0
            }
            return n == 1 ? .action(.resetStream(errorCode: 7)) : .json(#"{"access_token":"ya29.second","expires_in":3599}"#)
        }))
        #expect(try await fixture.tokens.token() == "ya29.second")
        #expect(seen.withLock { $0 } == 2)
        await fixture.stand.shutdown()
    }

    @Test func oauthFailureFailsTheBatchOnce() async throws {
        let fixture = try FCMFixture(respond: FCMFixture.google(token: {
            .text(status: 400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
        }))
        let results = await fixture.transport.send((0..<50).map { plaintextDelivery(token: "t\($0)") })
        await fixture.stand.shutdown()
        #expect(results.count == 50)
        #expect(results.allSatisfy { $0.outcome == .failed })
        #expect(results.first?.reasonText?.contains("invalid_grant") == true)
        #expect(results.first?.reasonText?.contains("Invalid JWT Signature.") == true)
        #expect(fixture.exchanges.count == 1)
        #expect(fixture.sends.isEmpty)
    }

    static let unregistered =
        #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#
    static let invalidTokenViolation =
        #"{"error":{"code":400,"message":"Invalid value at 'message.token'","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","description":"Invalid registration token"}]}]}}"#
    static let invalidTokenMessage =
        #"{"error":{"code":400,"message":"The registration token is not a valid FCM registration token","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"}]}}"#
    static let invalidData =
        #"{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"foo\"","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.data","description":"bad"}]}]}}"#

    @Test(arguments: [
        (200, #"{"name":"projects/p/messages/1"}"#, PushDeliveryOutcome.sent, nil as String?),
        (404, unregistered, .invalid, "UNREGISTERED"),
        (404, #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#, .failed,
            "NOT_FOUND: Requested entity was not found."),
        (400, invalidTokenViolation, .invalid, "INVALID_ARGUMENT: invalid registration token"),
        (400, invalidTokenMessage, .invalid, "INVALID_ARGUMENT: invalid registration token"),
        (400, invalidData, .failed, #"INVALID_ARGUMENT: Invalid JSON payload received. Unknown name "foo""#),
        (401, #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#, .failed,
            "UNAUTHENTICATED: Request had invalid authentication credentials."),
        (403, #"{"error":{"code":403,"message":"SenderId mismatch","status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"SENDER_ID_MISMATCH"}]}}"#,
            .failed, "SENDER_ID_MISMATCH: SenderId mismatch"),
        (429, #"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"QUOTA_EXCEEDED"}]}}"#,
            .failed, "QUOTA_EXCEEDED: Quota exceeded"),
        (503, #"{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}"#, .failed,
            "UNAVAILABLE: The service is currently unavailable."),
        (500, "oops", .failed, "http_500"),
    ])
    func answersAreClassified(_ status: Int, _ body: String, _ outcome: PushDeliveryOutcome, _ reason: String?) async throws {
        let fixture = try FCMFixture(respond: FCMFixture.google(send: { _ in .text(status: status, body) }))
        let result = try #require(await fixture.transport.send([plaintextDelivery()]).first)
        await fixture.stand.shutdown()
        #expect(result.outcome == outcome)
        #expect(result.reasonText == reason)
        #expect(result.status == status)
    }

    @Test func unauthenticatedAnswerDropsTheCachedToken() async throws {
        let fixture = try FCMFixture(respond: FCMFixture.google(send: { _ in
            .text(status: 401, #"{"error":{"code":401,"status":"UNAUTHENTICATED"}}"#)
        }))
        _ = await fixture.transport.send([plaintextDelivery()])
        _ = await fixture.transport.send([plaintextDelivery()])
        await fixture.stand.shutdown()
        #expect(fixture.exchanges.count == 2)
    }

    @Test func timeoutAndResetAreFailed() async throws {
        let fixture = try FCMFixture(timeout: .milliseconds(1500), respond: FCMFixture.google(send: { _ in .action(.neverRespond) }))
        #expect(try await fixture.tokens.token() == "ya29.test-access")
        let result = try #require(await fixture.transport.send([plaintextDelivery()]).first)
        #expect(result.outcome == .failed)
        #expect(result.reasonText == "timeout")
        fixture.stand.server.respond(FCMFixture.google(send: { _ in .action(.dropConnection) }))
        #expect(await fixture.transport.send([plaintextDelivery()]).first?.outcome == .failed)
        await fixture.stand.shutdown()
    }

    @Test func serviceAccountFieldsAreRequired() {
        #expect(throws: PushCredentialError.missingFields) { try FCMServiceAccount(json: Array(#"{"project_id":"p"}"#.utf8)) }
        #expect(throws: PushCredentialError.malformed) { try FCMServiceAccount(json: Array("nope".utf8)) }
        #expect(throws: PushCredentialError.unreadable) { try FCMServiceAccount(contentsOfFile: "/nonexistent/sa.json") }
    }
}
