import Foundation
import PushLoopbackServer
import PushTestSupport
import Testing

/// Issue 21 item 8: `hapi-push webpush …`, `compose --web`, `config`, `send --web-push`.
@Suite struct WebPushCLITests {
    func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("hapi-cli-webpush-\(UUID().uuidString)").path
    }

    func write(_ text: String, in dir: String, name: String) throws -> String {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = dir + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func subscribeListUnsubscribeAndThePublicKey() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let browser = try #require(WebPushTestBrowser())
        let endpoint = "https://fcm.googleapis.com/fcm/send/secret-capability-123"
        let body = try write(browser.subscribeBody(endpoint: endpoint), in: dir, name: "sub.json")
        let subscribed = try CLI.run(["--data-dir", dir, "webpush", "subscribe", "--namespace", "ns", "--request", body])
        #expect(subscribed.status == 0 && subscribed.stdout == "{\"ok\":true}\n", "\(subscribed.stderr)")
        let bad = try write(#"{"endpoint":"http://x.example/p","keys":{"p256dh":"a","auth":"b"}}"#, in: dir, name: "bad.json")
        let refused = try CLI.run(["--data-dir", dir, "webpush", "subscribe", "--namespace", "ns", "--request", bad])
        #expect(refused.status == 2 && refused.stdout == "{\"error\":\"Invalid body\"}\n")

        let list = try CLI.run(["--data-dir", dir, "webpush", "list", "--namespace", "ns", "--json"])
        #expect(list.status == 0)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]])
        #expect(array.count == 1)
        #expect(Set(array[0].keys) == ["origin", "fingerprint", "createdAt", "previousVapidPublicKey"])
        #expect(array[0]["previousVapidPublicKey"] is NSNull)
        #expect(array[0]["origin"] as? String == "https://fcm.googleapis.com")
        #expect((array[0]["fingerprint"] as? String)?.count == 12)
        for output in [list.stdout, try CLI.run(["--data-dir", dir, "webpush", "list", "--namespace", "ns"]).stdout] {
            #expect(!output.contains("secret-capability") && !output.contains(browser.p256dh) && !output.contains(browser.auth))
        }

        let key = try CLI.run(["--data-dir", dir, "webpush", "vapid-public-key"])
        #expect(key.status == 0)
        let again = try CLI.run(["--data-dir", dir, "webpush", "vapid-public-key"])
        #expect(again.stdout == key.stdout && key.stdout.hasPrefix(#"{"publicKey":"B"#))
        let settings = try String(contentsOfFile: dir + "/settings.json", encoding: .utf8)
        let pair = try #require((try JSONSerialization.jsonObject(with: Data(settings.utf8)) as? [String: Any])?["vapidKeys"] as? [String: String])
        let privateKey = try #require(pair["privateKey"])
        let config = try CLI.run(["--data-dir", dir, "config", "--no-persist"])
        #expect(config.stdout.contains("Web Push:") && config.stdout.contains("VAPID pair present"))
        let configJSON = try CLI.run(["--data-dir", dir, "config", "--json", "--no-persist"])
        #expect(configJSON.stdout.contains(#""vapidKeys":"present""#))
        for output in [key.stdout, config.stdout, configJSON.stdout, key.stderr] { #expect(!output.contains(privateKey)) }

        let unsubscribe = try write(#"{"endpoint":"\#(endpoint)"}"#, in: dir, name: "unsub.json")
        #expect(try CLI.run(["--data-dir", dir, "webpush", "unsubscribe", "--namespace", "ns", "--request", unsubscribe]).status == 0)
        #expect(try CLI.run(["--data-dir", dir, "webpush", "list", "--namespace", "ns", "--json"]).stdout == "[]\n")
    }

    @Test func composeWeb() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let event = try write(
            #"{"event":"ready","session":{"id":"s1","active":true,"metadata":{"flavor":"claude","name":"hapi"}}}"#, in: dir, name: "e.json")
        let web = try CLI.run(["compose", "--event", event, "--web"])
        #expect(
            web.stdout
                == #"{"title":"Ready for input","body":"Claude is waiting in hapi","tag":"ready-s1","data":{"type":"ready","sessionId":"s1","url":"/sessions/s1"}}"#
                + "\n")
        let inactive = try write(#"{"event":"ready","session":{"id":"s1","active":false}}"#, in: dir, name: "i.json")
        #expect(try CLI.run(["compose", "--event", inactive, "--web"]).stdout == "null\n")
    }

    @Test func sendFallsBackToWebPushAndReportsIt() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try RecordingServer { _ in .init(status: 201) }
        defer { server.stop() }
        let browser = try #require(WebPushTestBrowser())
        let body = try write(browser.subscribeBody(endpoint: server.baseURL + "/push/1"), in: dir, name: "sub.json")
        #expect(try CLI.run(["--data-dir", dir, "webpush", "subscribe", "--namespace", "ns", "--request", body]).status == 0)
        var environment = ProcessInfo.processInfo.environment
        environment["HAPI_PUSH_CA_FILE"] = server.caFile
        environment["HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS"] = "1"
        let sent = try CLI.run(
            ["--data-dir", dir, "send", "--namespace", "ns", "--type", "ready", "--session-id", "s1", "--json"], environment: environment)
        #expect(sent.status == 0, "\(sent.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sent.stdout.utf8)) as? [String: Any])
        let webPush = try #require(object["webPush"] as? [String: Any])
        #expect(webPush["decision"] as? String == "sent")
        let delivery = try #require((webPush["deliveries"] as? [[String: Any]])?.first)
        #expect(delivery["outcome"] as? String == "sent" && delivery["status"] as? Int == 201)
        #expect((delivery["endpoint"] as? String)?.hasPrefix("https://127.0.0.1:") == true)
        #expect(object["suppressWebPush"] as? Bool == false)
        let plaintext = try #require(server.requests.first.flatMap { browser.decrypt($0.body) })
        #expect(
            String(decoding: plaintext, as: UTF8.self)
                == #"{"title":"Ready for input","body":"Agent is waiting in s1","tag":"ready-s1","data":{"type":"ready","sessionId":"s1","url":"/sessions/s1"}}"#)
        let off = try CLI.run(
            ["--data-dir", dir, "send", "--namespace", "ns", "--type", "ready", "--session-id", "s1", "--json", "--web-push", "off"], environment: environment)
        #expect(off.stdout.contains(#""webPush":{"decision":"disabled","deliveries":[]}"#))
    }
}
