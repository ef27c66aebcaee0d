import PushEnvelope
import PushHTTP
import PushLoopbackServer
import PushSync
import PushTestSupport
import Testing

@testable import PushRelay
@testable import PushTransports

/// Issue 27: one client per provider. The hub's transport and the relay's forwarder are built on
/// the same `APNsClient` / `FCMClient` value here (one token manager, one stand-in), so what Apple
/// or Google oblige us to do happens once, by one rule, whichever side sends.
@Suite struct ProviderClientSharingTests {
    static let staleFirst: @Sendable (Locked<String?>) -> RecordingServer.Responder = { first in
        { request in
            let authorization = request.header("authorization") ?? ""
            let stale = first.withLock { first -> Bool in
                if first == nil { first = authorization }
                return first == authorization
            }
            return stale ? .text(status: 403, #"{"reason":"ExpiredProviderToken"}"#) : .json("")
        }
    }

    @Test func hubAndRelayResendOnceAfterExpiredProviderTokenAndMintOnceBetweenThem() async throws {
        let server = try RecordingServer(respond: Self.staleFirst(Locked(nil)))
        let client = try HTTPClient(
            configuration: .init(
                requestTimeout: .seconds(5), additionalTrustedCAFile: server.caFile, maximumConnectionsPerHost: 1,
                maximumConcurrentStreamsPerConnection: 1000))
        let keys = try #require(TestKeys.p256())
        let credentials = try APNsCredentials(pem: Array(keys.privateKeyPEM.utf8), keyId: "KEYID12345", teamId: "TEAMID6789", bundleId: "run.hapi.app")
        let tokens = APNsProviderToken(credentials: credentials)
        let hub = APNsTransport(endpoint: server.baseURL, credentials: credentials, client: client, providerToken: tokens)
        let relay = RelayAPNsForwarder(apns: hub.apns, client: client)
        let deadline = ContinuousClock.now + .seconds(10)

        // Concurrent pushes from both sides all hear the stale token: one mint between them.
        let hubDeliveries = (0..<40).map { i in
            PushDelivery(target: .ios, token: String(repeating: "a", count: 60) + hex4(i), content: .envelope("AAAA"), collapseId: "ready-s1")
        }
        async let hubResults = hub.send(hubDeliveries)
        let relayOutcomes = await withTaskGroup(of: RelayProviderOutcome.self) { group in
            for i in 0..<40 {
                let push = RelayPush(
                    platform: .ios, token: String(repeating: "b", count: 60) + hex4(i), envelope: "AAAA", collapseId: nil, priority: 10)
                group.addTask { await relay.forward(push, deadline: deadline) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let results = await hubResults
        #expect(results.count == 40 && results.allSatisfy { $0.outcome == .sent && $0.attempts <= 2 })
        #expect(relayOutcomes.count == 40 && relayOutcomes.allSatisfy { $0.verdict == .accepted })
        #expect(await tokens.mintCount == 2)
        let requests = server.requests
        #expect(Set(requests.map { $0.header("authorization") ?? "" }).count == 2)
        // Each push went at most twice: once refused, once with the fresh token.
        let perPath = Dictionary(grouping: requests, by: \.path).mapValues(\.count)
        #expect(perPath.count == 80 && perPath.values.allSatisfy { $0 <= 2 })

        // `ExpiredProviderToken` at another status than Apple's 403 proves nothing about our
        // token: neither side mints or resends (the hub's copy used to).
        for status in [400, 500] {
            server.clearRequests()
            server.respond { _ in .text(status: status, #"{"reason":"ExpiredProviderToken"}"#) }
            let hubResult = try #require(await hub.send([hubDeliveries[0]]).first)
            let relayOutcome = await relay.forward(
                RelayPush(platform: .ios, token: String(repeating: "c", count: 64), envelope: "AAAA", collapseId: nil, priority: 10),
                deadline: ContinuousClock.now + .seconds(5))
            #expect(hubResult.outcome == .failed)
            #expect(hubResult.reasonText == "ExpiredProviderToken")
            #expect(hubResult.attempts == 1)
            #expect(relayOutcome == RelayProviderOutcome(.upstream, providerStatus: status, reason: "ExpiredProviderToken"))
            #expect(server.requests.count == 2)
        }
        #expect(await tokens.mintCount == 2)
        await client.shutdown()
        server.stop()
    }

    @Test func hubAndRelayDropTheAccessTokenAfter401AndTheNextSendExchangesANewOne() async throws {
        let issued = Locked(0)
        let rejected = Locked<Set<String>>(["Bearer ya29.1"])
        let server = try RecordingServer { request in
            if request.path == "/token" {
                let n = issued.withLock { n -> Int in
                    n += 1
                    return n
                }
                return .json(#"{"access_token":"ya29.\#(n)","expires_in":3599,"token_type":"Bearer"}"#)
            }
            let authorization = request.header("authorization") ?? ""
            return rejected.withLock { $0.contains(authorization) }
                ? .text(status: 401, #"{"error":{"code":401,"status":"UNAUTHENTICATED"}}"#) : .json(#"{"name":"projects/p/messages/1"}"#)
        }
        let client = try HTTPClient(configuration: .init(requestTimeout: .seconds(5), additionalTrustedCAFile: server.caFile))
        let keys = try #require(TestKeys.rsa2048())
        let json = JSONValue.object([
            "type": "service_account", "project_id": "hapi-demo", "client_email": "relay@hapi-demo.iam.gserviceaccount.com",
            "private_key": .string(keys.privateKeyPEM), "token_uri": .string(server.baseURL + "/token"),
        ])
        let account = try FCMServiceAccount(json: json.canonicalBytes)
        let tokens = FCMAccessTokenProvider(account: account, client: client)
        let hub = FCMTransport(endpoint: server.baseURL, account: account, client: client, accessTokens: tokens)
        let relay = RelayFCMForwarder(fcm: hub.fcm, packageName: "run.hapi.companion", client: client)
        let delivery = PushDelivery(target: .androidPhone, token: "fcm-token:1", content: .plaintext(samplePayloadForSharing), collapseId: "ready-s1")
        let push = RelayPush(platform: .android, token: "fcm-token:2", envelope: "AAAA", collapseId: nil, priority: 10)
        func sends() -> [String] { server.requests.filter { $0.path != "/token" }.map { $0.header("authorization") ?? "" } }

        // The hub hears 401: the relay's next push exchanges a new token and is accepted.
        let refused = try #require(await hub.send([delivery]).first)
        #expect(refused.outcome == .failed && refused.status == 401)
        #expect(await relay.forward(push, deadline: ContinuousClock.now + .seconds(5)).verdict == .accepted)
        #expect(await tokens.exchangeCount == 2)
        // The relay hears 401: the hub's next batch exchanges a new token and is sent.
        rejected.withLock { _ = $0.insert("Bearer ya29.2") }
        let upstream = await relay.forward(push, deadline: ContinuousClock.now + .seconds(5))
        #expect(upstream == RelayProviderOutcome(.upstream, providerStatus: 401, reason: "UNAUTHENTICATED"))
        #expect(await hub.send([delivery]).first?.outcome == .sent)
        #expect(await tokens.exchangeCount == 3)
        #expect(sends() == ["Bearer ya29.1", "Bearer ya29.2", "Bearer ya29.2", "Bearer ya29.3"])
        await client.shutdown()
        server.stop()
    }
}

/// Four lowercase hex digits.
private func hex4(_ value: Int) -> String {
    let hex = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 4 - hex.count)) + hex
}

private let samplePayloadForSharing = PushNotificationPayload(
    type: .ready, sessionId: "s1", sessionName: "claude - hapi", url: "/sessions/s1", title: "Claude is ready", body: "Ready for input",
    severity: .info)
