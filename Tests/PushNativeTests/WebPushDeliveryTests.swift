import Foundation
import PushEnvelope
import PushLoopbackServer
import PushProviders
import PushTestSupport
import Testing

@testable import PushNative

/// Issue 21 items 5–7: delivery to a Web Push service stand-in on loopback (real TLS, HTTP/2 and
/// HTTP/1.1), decrypted by the browser stand-in, the VAPID JWT verified; each outcome; the SSRF
/// refusal; the gate in each of its decisions.
@Suite(.serialized) struct WebPushDeliveryTests {
    static let session = PushSession(id: "s1", metadata: ["flavor": "claude", "name": "hapi"])

    final class Hub: @unchecked Sendable {
        let directory: String
        let push: NativePush
        init(server: LoopbackServer, extra: [String: String] = [:]) async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-webpush-\(UUID().uuidString)").path
            var environment = [
                "HAPI_HOME": directory, "HAPI_PUSH_CA_FILE": server.caCertificatePath ?? "", "HAPI_PUSH_RELAY_URL": server.baseURL,
                "HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS": "1",
            ]
            environment.merge(extra) { $1 }
            push = try await NativePush.start(environment: environment, dataDirectory: directory)
        }
        deinit { try? FileManager.default.removeItem(atPath: directory) }

        func subscribe(_ browser: WebPushTestBrowser, endpoint: String, namespace: String = "ns") async throws {
            let routes = try #require(push.webPush)
            let answer = await routes.subscribe(namespace: namespace, body: Array(browser.subscribeBody(endpoint: endpoint).utf8))
            #expect(answer.status == 200, "\(answer.body)")
        }

        func send(visible: Bool = false) async throws -> PushNotificationReport {
            try await push.send(
                PushNotificationComposer.ready(for: WebPushDeliveryTests.session, messages: []),
                webPayload: PushNotificationComposer.webReady(for: WebPushDeliveryTests.session), namespace: "ns",
                webClientVisible: { _ in visible })
        }
    }

    @Test(arguments: [false, true]) func aBrowserReceivesDecryptsAndTheJWTVerifies(http1Only: Bool) async throws {
        let recorded = RecordedRequests()
        let server = try LoopbackServer(http1Only: http1Only) { request in
            recorded.append(request)
            return .init(status: 201)
        }
        defer { server.stop() }
        let hub = try await Hub(server: server)
        defer { Task { await hub.push.shutdown() } }
        let browser = try #require(WebPushTestBrowser())
        try await hub.subscribe(browser, endpoint: server.localhostBaseURL + "/wpush/v2/abc?x=1")
        let report = try await hub.send()
        #expect(report.webPush.decision == .sent)
        #expect(report.webPush.deliveries.map(\.outcome) == [.sent])
        #expect(report.webPush.deliveries.first?.origin == "https://localhost:\(server.port)")
        let request = try #require(recorded.all.first)
        #expect(request.httpVersion == (http1Only ? 1 : 2))
        #expect(request.method == "POST" && request.path == "/wpush/v2/abc?x=1")
        #expect(request.header("ttl") == "2419200")
        #expect(request.header("content-encoding") == "aes128gcm")
        #expect(request.header("content-type") == "application/octet-stream")
        let plaintext = try #require(browser.decrypt(request.body))
        #expect(String(decoding: plaintext, as: UTF8.self) == PushNotificationComposer.webReady(for: Self.session).json)
        // RFC 8292: t=<JWT>, k=<the public key vapid-public-key serves>.
        let authorization = try #require(request.header("authorization"))
        let publicKey = try #require(hub.push.webPush?.vapidPublicKey)
        #expect(authorization.hasSuffix(", k=" + publicKey))
        let token = String(authorization.dropFirst("vapid t=".count).prefix { $0 != "," })
        let pem = try #require(WebPushTestBrowser.publicKeyPEM(vapidPublicKey: publicKey))
        let claims = try #require(JWTVerifier.verify(token, publicKeyPEM: pem)?.claims)
        #expect(claims["aud"] == .string("https://localhost:\(server.port)"))
        #expect(claims["sub"] == "mailto:admin@hapi.run")
        let exp = try #require(claims["exp"].flatMap { if case .integer(let v) = $0 { return v } else { return nil } })
        let now = Int64(Date().timeIntervalSince1970)
        #expect(exp > now + 11 * 3600 && exp <= now + 12 * 3600 + 60)
    }

    /// (status, body, headers, outcome, reason, kept)
    static let outcomes: [(Int, String, [LoopbackServer.Header], PushDeliveryOutcome, String?, Bool)] = [
        (201, "", [], .sent, nil, true),
        (404, "", [], .invalid, "subscription_gone", false),
        (410, "", [], .invalid, "subscription_gone", false),
        (413, "", [], .failed, "too_large", true),
        (429, "", [.init(name: "retry-after", value: "30")], .failed, "http_429", true),
        (400, #"{"reason":"BadJwtToken"}"#, [], .failed, "BadJwtToken", true),
        (401, #"{"code":401,"errno":109,"error":"Unauthorized","message":"Request did not validate"}"#, [], .failed, "Unauthorized: Request did not validate", true),
        (403, "forbidden\u{1B}[31m", [], .failed, "http_403: forbidden\\x1B[31m", true),
        (500, "", [], .failed, "http_500", true),
    ]

    @Test(arguments: outcomes.indices) func eachAnswerOfThePushService(_ index: Int) async throws {
        let (status, body, headers, outcome, reason, kept) = Self.outcomes[index]
        let server = try LoopbackServer { _ in .init(status: status, headers: headers, body: Array(body.utf8)) }
        defer { server.stop() }
        let hub = try await Hub(server: server)
        defer { Task { await hub.push.shutdown() } }
        let browser = try #require(WebPushTestBrowser())
        try await hub.subscribe(browser, endpoint: server.baseURL + "/push/1")
        let report = try await hub.send()
        let delivery = try #require(report.webPush.deliveries.first)
        #expect(delivery.outcome == outcome)
        #expect(delivery.reason.map { $0.text(detail: delivery.detail) } == reason)
        #expect(delivery.status == status)
        #expect(delivery.removed == !kept)
        let store = try #require(hub.push.webPush?.store)
        #expect(try await store.webSubscriptions(namespace: "ns").count == (kept ? 1 : 0))
    }

    /// After a rotation: a 401/403 for the current key is sent once more with each kept key,
    /// in order, and only then reported; the answer reported is the current key's.
    @Test(arguments: [401, 403]) func aRefusedIdentityIsTriedOnceWithEachKeptKey(status: Int) async throws {
        let recorded = RecordedRequests()
        let server = try LoopbackServer { request in
            recorded.append(request)
            return .init(status: status)
        }
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-webpush-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let oldest = try PushVAPIDKeyRotation.rotate(dataDirectory: directory).publicKey
        let older = try PushVAPIDKeyRotation.rotate(dataDirectory: directory).publicKey
        let current = try PushVAPIDKeyRotation.rotate(dataDirectory: directory).publicKey
        let push = try await NativePush.start(
            environment: ["HAPI_HOME": directory, "HAPI_PUSH_CA_FILE": server.caCertificatePath ?? "", "HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS": "1"],
            dataDirectory: directory)
        let browser = try #require(WebPushTestBrowser())
        let routes = try #require(push.webPush)
        #expect(await routes.subscribe(namespace: "ns", body: Array(browser.subscribeBody(endpoint: server.baseURL + "/push/1").utf8)).status == 200)
        let report = try await push.sendWebPush(PushNotificationComposer.webReady(for: Self.session), namespace: "ns", nativeSent: false)
        #expect(report.webPush(\.outcome) == [.failed] && report.webPush(\.status) == [status] && report.webPush(\.previousVAPIDPublicKey) == [nil])
        #expect(recorded.all.compactMap { $0.header("authorization")?.components(separatedBy: "k=").last } == [current, older, oldest])
        #expect(try await routes.store.webSubscriptions(namespace: "ns").first?.previousVAPIDPublicKey == nil)
        await push.shutdown()
    }

    @Test func aMessageOverTheLimitIsRefusedBeforeSending() async throws {
        let server = try LoopbackServer { _ in .init(status: 201) }
        defer { server.stop() }
        let hub = try await Hub(server: server)
        defer { Task { await hub.push.shutdown() } }
        let browser = try #require(WebPushTestBrowser())
        try await hub.subscribe(browser, endpoint: server.baseURL + "/push/1")
        let big = PushWebPayload(title: "t", body: String(repeating: "x", count: 4000), tag: nil, type: "ready", sessionId: "s1", url: "/sessions/s1")
        let report = try await hub.push.sendWebPush(big, namespace: "ns", nativeSent: false)
        #expect(report.webPush(\.reason) == [.tooLarge])
        #expect(server.requestsHandled == 0)
        #expect(try await hub.push.webPush?.store.webSubscriptions(namespace: "ns").count == 1)
    }

    @Test func privateEndpointsAreRefusedUnlessAllowed() async throws {
        let server = try LoopbackServer { _ in .init(status: 201) }
        defer { server.stop() }
        let hub = try await Hub(server: server, extra: ["HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS": "0"])
        defer { Task { await hub.push.shutdown() } }
        for endpoint in [server.baseURL, server.localhostBaseURL, "https://[::ffff:127.0.0.1]:\(server.port)"] {
            let browser = try #require(WebPushTestBrowser())
            try await hub.subscribe(browser, endpoint: endpoint + "/push/" + UUID().uuidString)
        }
        let report = try await hub.send()
        #expect(report.webPush.decision == .sent)
        #expect(report.webPush.deliveries.count == 3)
        #expect(report.webPush.deliveries.allSatisfy { $0.outcome == .failed && $0.reason == .endpointNotAllowed && !$0.removed })
        #expect(server.connectionsAccepted == 0)
    }

    /// Issue 26 item 5: one client for every channel. The relay (a trusted origin, any address)
    /// and Web Push (endpoints a browser chose, public addresses only) share the hub's one
    /// `HTTPClient`; each request carries its own policy, so a Web Push endpoint on the relay's
    /// loopback origin is refused before connecting and never rides the relay's connection.
    @Test func oneClientServesTheRelayAndWebPushEachWithItsOwnPolicy() async throws {
        let server = try LoopbackServer { request in
            request.path == "/v1/push" ? .json(#"{"ok":true}"#) : .init(status: 201)
        }
        defer { server.stop() }
        let hub = try await Hub(server: server, extra: ["HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS": "0"])
        defer { Task { await hub.push.shutdown() } }
        #expect(hub.push.webPushChannel.transport?.client === hub.push.client)
        let key = try PushKey.generate()
        let body = #"{"token":"\#(String(repeating: "a1", count: 32))","platform":"ios","deviceId":"iphone","pushKey":"\#(key.base64)"}"#
        #expect(await hub.push.register(namespace: "ns", body: Array(body.utf8)) == .ok)
        let native = try await hub.push.dispatch(PushNotificationComposer.ready(for: Self.session, messages: []), namespace: "ns")
        #expect(native.count(.sent) == 1)
        #expect(server.connectionsAccepted == 1)
        try await hub.subscribe(try #require(WebPushTestBrowser()), endpoint: server.baseURL + "/push/" + UUID().uuidString)
        let web = try await hub.push.sendWebPush(PushNotificationComposer.webReady(for: Self.session), namespace: "ns", nativeSent: false)
        #expect(web.deliveries.count == 1)
        #expect(web.deliveries.allSatisfy { $0.outcome == .failed && $0.reason == .endpointNotAllowed })
        #expect(server.connectionsAccepted == 1)
        #expect(server.requestsHandled == 1)
    }

    @Test func theGateInEachOfItsDecisions() async throws {
        let server = try LoopbackServer { request in
            request.path == "/v1/push" ? .init(status: 200, headers: [.init(name: "content-type", value: "application/json")], body: Array(#"{"ok":true}"#.utf8)) : .init(status: 201)
        }
        defer { server.stop() }
        let hub = try await Hub(server: server)
        defer { Task { await hub.push.shutdown() } }
        // No subscription in the namespace.
        #expect(try await hub.send().webPush.decision == .noSubscriptions)
        let browser = try #require(WebPushTestBrowser())
        try await hub.subscribe(browser, endpoint: server.baseURL + "/push/1")
        // A visible web client: the hub toasts, nothing is sent.
        let visible = try await hub.send(visible: true)
        #expect(visible.webPush.decision == .webClientVisible && visible.webPush.deliveries.isEmpty)
        #expect(try await hub.send().webPush.decision == .sent)
        // A native device that got it: no Web Push.
        let key = Base64.encode([UInt8](repeating: 7, count: 32))
        let registered = await hub.push.register(
            namespace: "ns", body: Array(#"{"token":"fcm-token-1","platform":"phone","deviceId":"d1","pushKey":"\#(key)"}"#.utf8))
        #expect(registered.status == 200)
        let native = try await hub.send()
        #expect(native.native.suppressWebPush)
        #expect(native.webPush.decision == .nativeSent && native.webPush.deliveries.isEmpty)
        // Off.
        let off = try await Hub(server: server, extra: ["HAPI_WEB_PUSH": "off"])
        #expect(try await off.send().webPush.decision == .disabled)
        await off.push.shutdown()
    }
}

final class RecordedRequests: @unchecked Sendable {
    private let lock = NSLock()
    private var requests: [LoopbackServer.Request] = []
    func append(_ request: LoopbackServer.Request) {
        lock.lock()
        requests.append(request)
        lock.unlock()
    }
    var all: [LoopbackServer.Request] {
        lock.lock()
        defer { lock.unlock() }
        return requests
    }
}

extension PushWebPushReport {
    func webPush<T>(_ path: KeyPath<Delivery, T>) -> [T] { deliveries.map { $0[keyPath: path] } }
}
