import Foundation
import PushLoopbackServer
import PushEnvelope
import PushNative
import PushTestSupport

/// `hapi-push-demo` (`make demo`, or `hapi-push demo`): the whole flow on one machine with no credentials and no
/// internet. Loopback stand-ins play the relay, APNs and FCM over real HTTP/2 + TLS; throwaway
/// keys play the operator's credentials; a temporary registry holds four devices.
enum DemoCommand {
    static func run(_ arguments: [String]) async throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print("Usage: hapi-push-demo (or hapi-push demo)\n\nRuns the golden envelope and a full dispatch against loopback stand-ins for the relay, APNs and FCM.")
            return 0
        }
        guard arguments.isEmpty else { throw DemoUsageError() }
        try goldenEnvelope()
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let directory = providers.directory + "/hub"
        let keys = (iphone: try PushKey.generate(), pixel: try PushKey.generate())

        heading("2. Stand-ins on loopback (real HTTP/2 over TLS, trusted through their own CA)")
        print("relay \(providers.relay.baseURL)   APNs \(providers.apns.baseURL)   FCM + OAuth \(providers.fcm.baseURL)")

        heading("3. Four devices register (temporary registry \(directory)/native-push.sqlite3)")
        var hub = try await makeHub(providers, ios: "relay", android: "relay", directory: directory)
        let iphoneToken = String(repeating: "a1", count: 32)
        let registrations: [(String, String, String, String?)] = [
            ("ios", "iphone", iphoneToken, keys.iphone.base64), ("phone", "pixel", "fcm-token-pixel", keys.pixel.base64),
            ("phone", "old-pixel", "fcm-token-old-pixel", nil), ("wear", "watch", "fcm-token-watch", nil),
        ]
        for (platform, id, token, key) in registrations {
            var object: [String: JSONValue] = ["platform": .string(platform), "deviceId": .string(id), "token": .string(token)]
            if let key { object["pushKey"] = .string(key) }
            let answer = await hub.register(namespace: "demo", body: JSONValue.object(object).canonicalBytes)
            print("POST /api/devices/register \(platform) \(id)\(key == nil ? " (no pushKey)" : "") → \(answer.status) \(answer.body)")
        }
        let bad = await hub.register(namespace: "demo", body: Array(#"{"platform":"ios","deviceId":"x","token":"abc"}"#.utf8))
        print("POST /api/devices/register (bad iOS body) → \(bad.status) \(bad.body)")

        // The session as the hub stores it, and its last message: the JavaScript hub's composer
        // words every notification from these, as a Swift hub's `PushNotificationScheduler` does.
        let session = PushSession(id: "7f3a", metadata: ["flavor": "claude", "name": "hapi"])
        let lastMessage: JSONValue = [
            "role": "agent",
            "content": [
                "type": "output",
                "data": [
                    "type": "assistant",
                    "message": ["content": [["type": "text", "text": "All done.\nAGENT_NOTIFY_SUMMARY {\"summary\":\"Tests pass\",\"action\":\"Review the diff\"}"]]],
                ],
            ],
        ]
        func pending(_ id: String, _ tool: String, _ arguments: JSONValue) -> PushSession {
            var waiting = session
            let request: JSONValue = ["tool": .string(tool), "arguments": arguments]
            waiting.agentState = ["requests": .object([(key: id, value: request)])]
            return waiting
        }
        let question = pending(
            "req-43", "AskUserQuestion",
            ["questions": [["question": "Which database should we use?", "options": [["label": "SQLite"]]], ["question": "Deploy now?"]]])
        let failedTask: JSONValue = ["type": "output", "data": ["type": "system", "subtype": "task_notification", "summary": "3 tests failed", "status": "failed"]]
        let events: [PushNotificationPayload] = [
            PushNotificationComposer.ready(for: session, messages: [lastMessage]),
            PushNotificationComposer.permissionRequest(for: pending("req-42", "Bash", ["command": "swift test"])),
            PushNotificationComposer.pendingRequest(for: question) ?? PushNotificationComposer.ready(for: session, messages: []),
            PushNotificationComposer.taskNotification(for: session, content: failedTask) ?? PushNotificationComposer.ready(for: session, messages: []),
        ]

        heading("4. iOS relay + Android relay (the defaults): the relay sees ciphertext only")
        try await dispatchAll(events, hub: hub)
        if let request = providers.relay.requests.first(where: { $0.bodyString.contains("\"ios\"") }) {
            try showRelayed(request, key: keys.iphone, label: "iphone")
        }
        if let request = providers.relay.requests.first(where: { $0.bodyString.contains("android") }) {
            try showRelayed(request, key: keys.pixel, label: "pixel")
        }
        await hub.shutdown()

        heading("5. Direct APNs (ES256 provider token) + direct FCM (service-account OAuth, plaintext data)")
        providers.clearRequests()
        hub = try await makeHub(providers, ios: "apns", android: "fcm", directory: directory)
        try await dispatchAll(Array(events.prefix(2)), hub: hub)
        if let request = providers.apns.requests.first {
            print("APNs received: POST \(request.path.prefix(24))… apns-topic=\(request.header("apns-topic") ?? "") apns-collapse-id=\(request.header("apns-collapse-id") ?? "") authorization=bearer <ES256 JWT, \(request.header("authorization")?.split(separator: ".").count ?? 0) segments>")
            let object = try JSONParser.parse(request.body)
            let envelope = object["hapi"]?["e"]?.stringValue ?? ""
            print("  body: {\"aps\":{…\"alert\":{\"title\":\"HAPI\",\"body\":\"New activity\"}…},\"hapi\":{\"v\":1,\"e\":\"\(envelope.prefix(28))…\"}}")
            let opened = try ReceivedPush.decode(version: "1", envelope: envelope, key: keys.iphone)
            print("  the iPhone's extension decrypts: \"\(opened.title)\" / \"\(opened.body)\"")
        }
        let tokenRequests = providers.fcm.requests.filter { $0.path == "/token" }.count
        if let request = providers.fcm.requests.first(where: { $0.path != "/token" }) {
            print("FCM received (after \(tokenRequests) OAuth exchange for the whole batch): POST \(request.path)")
            print("  body: \(request.bodyString.replacingOccurrences(of: "fcm-token-", with: "…").prefix(220))…")
        }

        heading("6. A 410 from the provider prunes exactly that device")
        providers.apns.respond { _ in .text(status: 410, #"{"reason":"Unregistered"}"#) }
        let pruned = try await hub.dispatch(events[0], namespace: "demo")
        print(DemoReport.render(pruned))
        let remaining = try await hub.registry.store.devices(namespace: "demo").map(\.deviceId)
        print("registry now holds: \(remaining.joined(separator: ", "))")
        providers.apns.respond { _ in .json("") }
        await hub.shutdown()

        heading("7. The 3200-byte envelope cap: drop notifySummary, then the minimal notification")
        providers.clearRequests()
        hub = try await makeHub(providers, ios: "relay", android: "relay", directory: directory)
        _ = await hub.register(
            namespace: "demo", body: JSONValue.object(["platform": "ios", "deviceId": "iphone", "token": .string(iphoneToken), "pushKey": .string(keys.iphone.base64)]).canonicalBytes)
        var big = events[0]
        big.notifySummary = JSONValue.object(["log": .string(String(repeating: "x", count: 3000))]).canonicalString
        print("ready with a 3 KB notifySummary (plaintext \(big.canonicalJSON.count) B → envelope \(PushEnvelopeCipher.sealedLength(plaintextCount: big.canonicalJSON.count)) B):")
        print(DemoReport.render(try await hub.dispatch(big, namespace: "demo")))
        var huge = events[1]
        huge.body = String(repeating: "long command line ", count: 200)
        print("permission-request with a 3.6 KB body:")
        print(DemoReport.render(try await hub.dispatch(huge, namespace: "demo")))
        if let last = providers.relay.requests.last(where: { $0.bodyString.contains("\"ios\"") }), let envelope = try JSONParser.parse(last.body)["envelope"]?.stringValue {
            let opened = try ReceivedPush.decode(version: "1", envelope: envelope, key: keys.iphone)
            print("  the iPhone decrypts the minimal form: \"\(opened.title)\" / \"\(opened.body)\", requestId \(opened.requestId ?? "-") kept")
        }
        await hub.shutdown()

        heading("8. The Web Push decision")
        hub = try await makeHub(providers, ios: "off", android: "relay", directory: directory)
        let offReport = try await hub.dispatch(events[0], namespace: "demo")
        print("iOS off, Android relay: " + (offReport.suppressWebPush ? "suppress Web Push" : "Web Push fires"))
        providers.relay.respond { _ in .text(status: 502, #"{"ok":false,"code":"upstream"}"#) }
        let failing = try await hub.dispatch(events[0], namespace: "demo")
        print(DemoReport.render(failing))
        await hub.shutdown()

        try await webPushFallback(providers, directory: directory)
        return 0
    }

    /// Issue 21: a browser subscribes; with no native device the notification reaches it by Web
    /// Push (RFC 8291 encrypted, RFC 8292 signed), and with one it does not.
    static func webPushFallback(_ providers: LoopbackProviders, directory: String) async throws {
        heading("9. The Web Push fallback (the operator's browser)")
        // The relay stand-in doubles as a browser's push service (its /push/… paths answer 201).
        providers.relay.respond { request in
            request.path.hasPrefix("/push/") ? LoopbackServer.Response(status: 201) : .json(#"{"ok":true}"#)
        }
        var environment = providers.environment(iosMode: "relay", androidMode: "relay", dataDirectory: directory)
        environment["HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS"] = "1"  // the stand-in is on loopback
        let configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: false)
        let hub = try NativePush(
            configuration: configuration, store: try SQLitePushDeviceStore(directory: directory), dataDirectory: directory)
        guard let routes = hub.webPush, let browser = WebPushTestBrowser() else {
            print("Web Push unavailable: \(hub.webPushOffReason ?? "no browser key")")
            await hub.shutdown()
            return
        }
        print("GET /api/push/vapid-public-key → \(routes.vapidPublicKeyAnswer.body.prefix(40))…\"}")
        let subscribed = await routes.subscribe(namespace: "web", body: Array(browser.subscribeBody(endpoint: providers.relay.baseURL + "/push/browser-1").utf8))
        print("POST /api/push/subscribe (the PWA's PushSubscription.toJSON()) → \(subscribed.status) \(subscribed.body)")
        let session = PushSession(id: "web-session", metadata: ["flavor": "claude", "name": "hapi"])
        providers.clearRequests()
        let first = try await hub.send(
            PushNotificationComposer.ready(for: session, messages: []), webPayload: PushNotificationComposer.webReady(for: session), namespace: "web")
        print("no native device in namespace web → Web Push decision: \(first.webPush.decision)")
        for delivery in first.webPush.deliveries {
            print("  \(delivery.endpoint) \(delivery.outcome.rawValue) HTTP \(delivery.status.map(String.init) ?? "-")")
        }
        if let request = providers.relay.requests.first(where: { $0.path.hasPrefix("/push/") }) {
            print("push service received: POST /push/browser-1 ttl=\(request.header("ttl") ?? "") content-encoding=\(request.header("content-encoding") ?? "") authorization=vapid t=<ES256 JWT>, k=<public key> (\(request.body.count) B body)")
            let plaintext = browser.decrypt(request.body).map { String(decoding: $0, as: UTF8.self) } ?? "(did not decrypt)"
            print("  the browser decrypts: \(plaintext)")
        }
        let key = try PushKey.generate()
        let registered = await hub.register(
            namespace: "web", body: Array(#"{"token":"fcm-token-web","platform":"phone","deviceId":"pixel-web","pushKey":"\#(key.base64)"}"#.utf8))
        print("POST /api/devices/register phone pixel-web → \(registered.status) \(registered.body)")
        providers.clearRequests()
        let second = try await hub.send(
            PushNotificationComposer.ready(for: session, messages: []), webPayload: PushNotificationComposer.webReady(for: session), namespace: "web")
        let webRequests = providers.relay.requests.filter { $0.path.hasPrefix("/push/") }.count
        print("a native device got it (sent \(second.native.count(.sent))) → Web Push decision: \(second.webPush.decision); Web Push requests: \(webRequests)")
        await hub.shutdown()
    }

    static func makeHub(_ providers: LoopbackProviders, ios: String, android: String, directory: String) async throws -> NativePush {
        let environment = providers.environment(iosMode: ios, androidMode: android, dataDirectory: directory)
        let configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: false)
        return try NativePush(configuration: configuration, store: try SQLitePushDeviceStore(directory: directory))
    }

    static func dispatchAll(_ events: [PushNotificationPayload], hub: NativePush) async throws {
        for payload in events {
            print("\(payload.type) — \"\(payload.title)\" / \"\(payload.body.replacingOccurrences(of: "\n", with: " ⏎ "))\"")
            print(DemoReport.render(try await hub.dispatch(payload, namespace: "demo")))
        }
    }

    static func showRelayed(_ request: LoopbackServer.Request, key: PushKey, label: String) throws {
        let object = try JSONParser.parse(request.body)
        let envelope = object["envelope"]?.stringValue ?? ""
        print("relay received for \(label): {\"platform\":\"\(object["platform"]?.stringValue ?? "")\",\"token\":\"…\",\"envelope\":\"\(envelope.prefix(32))…\" (\(envelope.count) B)\(object["collapseId"]?.stringValue.map { ",\"collapseId\":\"\($0)\"" } ?? ""),\"priority\":10}")
        let opened = try ReceivedPush.decode(version: "1", envelope: envelope, key: key)
        print("  \(label) decrypts: type=\(opened.type) title=\"\(opened.title)\" notifySummary=\(opened.notifySummary ?? "-")")
    }

    static func heading(_ text: String) {
        print("\n== \(text) ==")
    }

    static func goldenEnvelope() throws {
        let key = try PushKey(bytes: Array(0..<32))
        let payload = PushNotificationPayload(type: .ready, sessionId: "s1", title: "HAPI", body: "Ready for input")
        let plaintext = payload.canonicalJSON
        heading("1. The golden envelope (key 00..1f, nonce 00..0b, AAD \"hapi-push-v1\") the official iOS app pins")
        print("payload:  \(String(decoding: plaintext, as: UTF8.self))")
        let golden = try PushEnvelopeCipher.seal(plaintext, key: key, testVectorNonce: Array(0..<12))
        print("envelope: \(golden)")
        let opened = try ReceivedPush.decode(version: "1", envelope: golden, key: key)
        print("opened:   type=\(opened.type) title=\"\(opened.title)\" body=\"\(opened.body)\"; every real seal uses a fresh random nonce")
    }
}
