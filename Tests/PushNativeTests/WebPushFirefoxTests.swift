import Foundation
import PushEnvelope
import PushProviders
import PushTestSupport
import Testing

@testable import PushNative

/// Issue 28 item 3: a real browser. Debian's Firefox ESR (headless, a fresh profile, loopback
/// only) subscribes with the key `webpush vapid-public-key` prints, through our push-service
/// stand-in (scripts/firefox-push-service.py); `hapi-push send` and the library deliver, and the
/// service worker reports what it decrypted.
@Suite(.serialized) struct WebPushFirefoxTests {
    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-firefox-hub-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func environment(_ service: FirefoxPushService, directory: String) -> [String: String] {
        ["HAPI_HOME": directory, "HAPI_PUSH_CA_FILE": service.caFile, "HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS": "1"]
    }

    static func publicKey(cli: SecretCLI, directory: String) throws -> String {
        let printed = try cli.run(["--data-dir", directory, "webpush", "vapid-public-key"], [:])
        #expect(printed.status == 0, "\(printed.stderr)")
        let object = try JSONParser.parse(Array(printed.stdout.utf8))
        return try #require(object["publicKey"]?.stringValue)
    }

    @Test(.timeLimit(.minutes(2))) func firefoxReceivesWhatTheCLIAndTheLibrarySendByteForByte() async throws {
        let service = try FirefoxPushService()
        defer { #expect(service.stop(), "a process of Firefox or the push service was left running") }
        let hubDirectory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: hubDirectory) }
        let cli = SecretCLI()
        let key = try Self.publicKey(cli: cli, directory: hubDirectory)
        try await service.waitForBrowser()
        let subscription = try await service.subscribe(vapidPublicKey: key)
        #expect(service.all.contains { $0.name == "register" && $0["key"] == key })
        let requestFile = hubDirectory + "/subscription.json"
        try subscription.json.write(toFile: requestFile, atomically: true, encoding: .utf8)
        let subscribed = try cli.run(["--data-dir", hubDirectory, "webpush", "subscribe", "--namespace", "ns", "--request", requestFile], [:])
        #expect(subscribed.status == 0 && subscribed.stdout == "{\"ok\":true}\n", "\(subscribed.all)")

        // The CLI: the hub's ready payload, with text outside ASCII.
        var mark = service.mark
        let sent = try cli.run(
            ["--data-dir", hubDirectory, "send", "--namespace", "ns", "--type", "ready", "--session-id", "s1", "--session-name", "Café ☕ 🚀", "--json"],
            Self.environment(service, directory: hubDirectory))
        #expect(sent.status == 0, "\(sent.all)")
        #expect(sent.stdout.contains(#""outcome":"sent""#), "\(sent.stdout)")
        let fromCLI = try await service.received(from: mark)
        #expect(
            String(decoding: fromCLI, as: UTF8.self)
                == #"{"title":"Ready for input","body":"Agent is waiting in Café ☕ 🚀","tag":"ready-s1","data":{"type":"ready","sessionId":"s1","url":"/sessions/s1"}}"#)
        #expect(try await service.waitFor("ack", from: mark)["code"] == "100")

        // The library: the largest payload that fits one record of a 4,096-byte body.
        let push = try await NativePush.start(environment: Self.environment(service, directory: hubDirectory), dataDirectory: hubDirectory)
        var largest = PushWebPayload(title: "Größte ✓", body: "", tag: "ready-s1", type: "ready", sessionId: "s1", url: "/sessions/s1")
        largest.body = String(repeating: "é", count: (WebPushCipher.maximumPlaintextByteCount - largest.json.utf8.count) / 2)
        largest.body += String(repeating: "x", count: WebPushCipher.maximumPlaintextByteCount - largest.json.utf8.count)
        #expect(largest.json.utf8.count == 3993)
        mark = service.mark
        let report = try await push.sendWebPush(largest, namespace: "ns", nativeSent: false)
        #expect(report.webPush(\.outcome) == [.sent] && report.webPush(\.status) == [201])
        #expect(try await service.waitFor("push", from: mark)["bytes"] == "4096")
        #expect(try await service.received(from: mark) == Array(largest.json.utf8))
        // One byte more is refused before sending.
        largest.body += "x"
        mark = service.mark
        #expect(try await push.sendWebPush(largest, namespace: "ns", nativeSent: false).webPush(\.reason) == [.tooLarge])
        #expect(!service.all.dropFirst(mark).contains { $0.name == "push" || $0.name == "refused" })
        await push.shutdown()

        // Signed with another data directory's key: refused (401), reported failed, kept.
        let otherDirectory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: otherDirectory) }
        let other = try await NativePush.start(environment: Self.environment(service, directory: otherDirectory), dataDirectory: otherDirectory)
        let routes = try #require(other.webPush)
        #expect(routes.vapidPublicKey != key)
        #expect(await routes.subscribe(namespace: "ns", body: Array(subscription.json.utf8)).status == 200)
        mark = service.mark
        let refused = try await other.sendWebPush(largest.trimmed, namespace: "ns", nativeSent: false)
        #expect(refused.webPush(\.outcome) == [.failed] && refused.webPush(\.status) == [401] && refused.webPush(\.removed) == [false])
        #expect(try await service.waitFor("refused", from: mark)["errno"] == "109")
        #expect(try await routes.store.webSubscriptions(namespace: "ns").count == 1)
        await other.shutdown()
    }

    /// Issue 28 item 4, end to end: subscribed under key A, rotated to B; a push refused (401)
    /// for B is sent again with A and delivered, A remembered and listed; the browser subscribes
    /// again under B as the hub's web client does; `--drop-old` ends the grace.
    @Test(.timeLimit(.minutes(2))) func aKeyRotationKeepsReachingABrowserUntilItSubscribesAgain() async throws {
        let service = try FirefoxPushService()
        defer { #expect(service.stop(), "a process of Firefox or the push service was left running") }
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cli = SecretCLI()
        let keyA = try Self.publicKey(cli: cli, directory: directory)
        try await service.waitForBrowser()
        let underA = try await service.subscribe(vapidPublicKey: keyA)
        #expect(underA.staleEndpoint == nil)
        let endpointA = try #require(try JSONParser.parse(Array(underA.json.utf8))["endpoint"]?.stringValue)

        let rotated = try cli.run(["--data-dir", directory, "webpush", "rotate-vapid-keys", "--json"], [:])
        #expect(rotated.status == 0, "\(rotated.all)")
        let rotation = try JSONParser.parse(Array(rotated.stdout.utf8))
        let keyB = try #require(rotation["publicKey"]?.stringValue)
        #expect(keyB != keyA && rotation["previousPublicKeys"] == .array([.string(keyA)]))
        #expect(try Self.publicKey(cli: cli, directory: directory) == keyB)
        let settings = try JSONParser.parse(Array(try String(contentsOfFile: directory + "/settings.json", encoding: .utf8).utf8))
        #expect(settings["vapidKeys"]?["publicKey"]?.stringValue == keyB)
        #expect(settings["previousVapidKeys"]?.arrayValue?.first?["publicKey"]?.stringValue == keyA)

        // The hub after its restart: B served; the push refused for B is sent again with A.
        let push = try await NativePush.start(environment: Self.environment(service, directory: directory), dataDirectory: directory)
        let routes = try #require(push.webPush)
        #expect(routes.vapidPublicKey == keyB)
        #expect(await routes.subscribe(namespace: "ns", body: Array(underA.json.utf8)).status == 200)
        let payload = PushWebPayload(title: "Ready for input", body: "rotated ✓", tag: "ready-s1", type: "ready", sessionId: "s1", url: "/sessions/s1")
        var mark = service.mark
        let first = try await push.sendWebPush(payload, namespace: "ns", nativeSent: false)
        #expect(first.webPush(\.outcome) == [.sent] && first.webPush(\.previousVAPIDPublicKey) == [keyA])
        #expect(try await service.received(from: mark) == Array(payload.json.utf8))
        let refusals = service.all.dropFirst(mark).filter { $0.name == "refused" }
        #expect(refusals.count == 1 && refusals.first?["status"] == "401" && refusals.first?["message"]?.contains("subscribing key") == true, "\(refusals)")
        let listed = try cli.run(["--data-dir", directory, "webpush", "list", "--namespace", "ns", "--json"], [:])
        #expect(listed.stdout.contains(#""previousVapidPublicKey":"\#(keyA)""#), "\(listed.all)")
        #expect(try cli.run(["--data-dir", directory, "webpush", "list", "--namespace", "ns"], [:]).stdout.contains("needs previous VAPID key " + keyA))

        // Remembered: the next push goes with A at once.
        mark = service.mark
        let second = try await push.sendWebPush(payload, namespace: "ns", nativeSent: false)
        #expect(second.webPush(\.outcome) == [.sent] && second.webPush(\.previousVAPIDPublicKey) == [keyA])
        _ = try await service.received(from: mark)
        #expect(!service.all.dropFirst(mark).contains { $0.name == "refused" })

        // The PWA loads, sees another key, gives up its subscription (the hub's DELETE) and subscribes under B.
        let underB = try await service.subscribe(vapidPublicKey: keyB)
        #expect(underB.staleEndpoint == endpointA)
        #expect(service.all.contains { $0.name == "register" && $0["key"] == keyB })
        #expect(await routes.unsubscribe(namespace: "ns", body: Array(#"{"endpoint":"\#(endpointA)"}"#.utf8)).status == 200)
        #expect(await routes.subscribe(namespace: "ns", body: Array(underB.json.utf8)).status == 200)
        mark = service.mark
        let third = try await push.sendWebPush(payload, namespace: "ns", nativeSent: false)
        #expect(third.webPush(\.outcome) == [.sent] && third.webPush(\.previousVAPIDPublicKey) == [nil])
        #expect(try await service.received(from: mark) == Array(payload.json.utf8))
        #expect(!service.all.dropFirst(mark).contains { $0.name == "refused" })
        let relisted = try cli.run(["--data-dir", directory, "webpush", "list", "--namespace", "ns", "--json"], [:])
        #expect(relisted.stdout.contains(#""previousVapidPublicKey":null"#) && !relisted.stdout.contains(keyA), "\(relisted.all)")
        await push.shutdown()

        // The grace ends.
        let dropped = try cli.run(["--data-dir", directory, "webpush", "rotate-vapid-keys", "--drop-old", "--json"], [:])
        #expect(dropped.status == 0 && dropped.stdout == "{\"dropped\":[\"\(keyA)\"]}\n", "\(dropped.all)")
        let after = try JSONParser.parse(Array(try String(contentsOfFile: directory + "/settings.json", encoding: .utf8).utf8))
        #expect(after["previousVapidKeys"] == nil && after["vapidKeys"]?["publicKey"]?.stringValue == keyB)
    }

    /// The stand-in refuses what Mozilla's push service refuses (so a sender that passes it
    /// passes autopush's checks), each case one change from a request it accepts.
    @Test(.timeLimit(.minutes(2))) func thePushServiceRefusesWhatMozillaRefuses() async throws {
        let service = try FirefoxPushService()
        defer { #expect(service.stop(), "a process of Firefox or the push service was left running") }
        let key = try WebPushP256Key.generate()
        let publicKey = Base64.urlEncodeUnpadded(key.publicKey)
        try await service.waitForBrowser()
        let subscription = try JSONParser.parse(Array(try await service.subscribe(vapidPublicKey: publicKey).json.utf8))
        let endpoint = try #require(subscription["endpoint"]?.stringValue)
        let origin = service.pushOrigin
        let p256dh = try #require(subscription["keys"]?["p256dh"]?.stringValue.flatMap(Base64.urlDecode))
        let auth = try #require(subscription["keys"]?["auth"]?.stringValue.flatMap(Base64.urlDecode))
        let sealed = try WebPushCipher.seal(plaintext: Array("refusals".utf8), subscriptionKey: p256dh, authSecret: auth)
        let now = Int64(Date().timeIntervalSince1970)
        func vapid(_ signer: WebPushP256Key = key, subject: String = "mailto:ops@example.com", shift: Int64 = 0, aud: String? = nil) async throws -> String {
            try await WebPushVAPID(keyPair: signer, subject: subject, now: { now + shift }).authorization(origin: aud ?? origin)
        }
        let good = try await vapid()
        let stranger = try WebPushP256Key.generate()
        let strangerHeader = try await vapid(stranger)
        let signedByStranger = String(strangerHeader.prefix { $0 != "," }) + ", k=" + publicKey
        let standard = ["TTL: 60", "Content-Encoding: aes128gcm", "Content-Type: application/octet-stream"]
        let cases: [(String, [String], [UInt8], Int, Int?)] = [
            ("accepted", standard + ["Authorization: " + good], sealed, 201, nil),
            ("no TTL", Array(standard.dropFirst()) + ["Authorization: " + good], sealed, 400, 111),
            ("aesgcm", ["TTL: 60", "Content-Encoding: aesgcm", "Authorization: " + good], sealed, 400, 110),
            ("4,097 bytes", standard + ["Authorization: " + good], [UInt8](repeating: 1, count: 4097), 413, 104),
            ("k of another key", standard + ["Authorization: " + strangerHeader], sealed, 401, 109),
            ("signed by another key", standard + ["Authorization: " + signedByStranger], sealed, 401, 109),
            ("wrong aud", standard + ["Authorization: " + (try await vapid(aud: "https://127.0.0.1:1"))], sealed, 401, 109),
            ("exp past 24 h", standard + ["Authorization: " + (try await vapid(shift: 13 * 3600))], sealed, 401, 109),
            ("sub http:", standard + ["Authorization: " + (try await vapid(subject: "http://example.com"))], sealed, 401, 109),
            ("Topic of 33", standard + ["Authorization: " + good, "Topic: " + String(repeating: "a", count: 33)], sealed, 400, 113),
        ]
        for (name, headers, body, status, errno) in cases {
            let answer = try Curl.post(endpoint, headers: headers, body: body, caFile: service.caFile, directory: service.directory)
            #expect(answer.status == status, "\(name): \(answer)")
            if let errno {
                #expect(answer.body["errno"] == .integer(Int64(errno)), "\(name): \(answer)")
            }
        }
        #expect(String(decoding: try await service.received(from: 0), as: UTF8.self) == "refusals")
        // An unsubscribed channel is gone (410), as autopush answers.
        let gone = try Curl.post(origin + "/wpush/v2/00000000-0000-0000-0000-000000000000", headers: standard + ["Authorization: " + good], body: sealed,
            caFile: service.caFile, directory: service.directory)
        #expect(gone.status == 410)
    }
}

extension PushWebPayload {
    /// A small payload of the same notification.
    var trimmed: PushWebPayload {
        var copy = self
        copy.body = "short"
        return copy
    }
}

/// Debian's curl as a hand-made push sender: what our library would never send.
enum Curl {
    struct Answer: CustomStringConvertible {
        let status: Int
        let body: JSONValue
        var description: String { "\(status) \(body.canonicalString)" }
    }

    static func post(_ url: String, headers: [String], body: [UInt8], caFile: String, directory: String) throws -> Answer {
        let bodyFile = directory + "/curl-body-\(UUID().uuidString)"
        let outFile = bodyFile + ".out"
        try Data(body).write(to: URL(fileURLWithPath: bodyFile))
        defer {
            unlink(bodyFile)
            unlink(outFile)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sS", "--max-time", "10", "--cacert", caFile, "-o", outFile, "-w", "%{http_code}", "--data-binary", "@" + bodyFile]
            + headers.flatMap { ["-H", $0] } + [url]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let text = (try? Data(contentsOf: URL(fileURLWithPath: outFile))).map { Array($0) } ?? []
        return Answer(status: Int(printed) ?? 0, body: (try? JSONParser.parse(text)) ?? .null)
    }
}
