import DeviceRegistryPostgres
import Foundation
import PushEnvelope
import PushTestSupport
import Testing

@testable import DeviceRegistry

/// The JavaScript hub's `push_subscriptions` table and routes (web-push.md §2), and our
/// stricter rules answering in the same `400 {"error":"Invalid body"}`.
@Suite struct WebPushSubscriptionTests {
    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    static let endpoint = "https://fcm.googleapis.com/fcm/send/abc:def"

    static func body(endpoint: String = endpoint, p256dh: String = p256dh, auth: String = auth) -> [UInt8] {
        Array(#"{"endpoint":"\#(endpoint)","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#.utf8)
    }

    final class Clock: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Int64 = 1_700_000_000_000
        func next() -> Int64 {
            lock.lock()
            defer { lock.unlock() }
            value += 1000
            return value
        }
    }

    func routes(_ directory: TemporaryDirectory) async throws -> (PushWebSubscriptions, SQLitePushDeviceStore) {
        let store = try await SQLitePushDeviceStore.open(directory: directory.path)
        let clock = Clock()
        return (PushWebSubscriptions(store: store, vapidPublicKey: "BPUB", now: { clock.next() }), store)
    }

    @Test func subscribeListReplaceAndUnsubscribeAnswerAsTheJSRoutes() async throws {
        let directory = TemporaryDirectory()
        let (routes, store) = try await routes(directory)
        #expect(await routes.subscribe(namespace: "ns", body: Self.body()) == PushDeviceRegistry.Answer(status: 200, body: #"{"ok":true}"#))
        #expect(await routes.subscribe(namespace: "ns", body: Self.body(endpoint: Self.endpoint + "2")).status == 200)
        #expect(await routes.subscribe(namespace: "other", body: Self.body()).status == 200)
        var listed = try await store.webSubscriptions(namespace: "ns")
        #expect(listed.map(\.endpoint) == [Self.endpoint + "2", Self.endpoint])  // newest first
        // The same (namespace, endpoint) again replaces keys and created_at: newest now.
        let otherKey = try #require(WebPushTestBrowser())
        #expect(await routes.subscribe(namespace: "ns", body: Self.body(p256dh: otherKey.p256dh, auth: otherKey.auth)).status == 200)
        listed = try await store.webSubscriptions(namespace: "ns")
        #expect(listed.map(\.endpoint) == [Self.endpoint, Self.endpoint + "2"])
        #expect(listed.first?.p256dh == otherKey.p256dh && listed.first?.auth == otherKey.auth)
        #expect(await routes.unsubscribe(namespace: "ns", body: Array(#"{"endpoint":"\#(Self.endpoint)"}"#.utf8)).body == #"{"ok":true}"#)
        #expect(await routes.unsubscribe(namespace: "ns", body: Array(#"{"endpoint":"https://nothing.example/x"}"#.utf8)).status == 200)
        #expect(try await store.webSubscriptions(namespace: "ns").map(\.endpoint) == [Self.endpoint + "2"])
        #expect(try await store.webSubscriptions(namespace: "other").count == 1)
        #expect(routes.vapidPublicKeyAnswer == PushDeviceRegistry.Answer(status: 200, body: #"{"publicKey":"BPUB"}"#))
    }

    static let invalid: [String] = [
        "not json", "null", "[]", "{}", #"{"endpoint":"https://a.example/x"}"#,
        #"{"endpoint":"","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#,
        #"{"endpoint":"https://a.example/x","keys":{"p256dh":"","auth":"\#(auth)"}}"#,
        #"{"endpoint":"https://a.example/x","keys":{"p256dh":"\#(p256dh)","auth":5}}"#,
        #"{"endpoint":"https://a.example/x","keys":"k"}"#,
        // Ours: https only, absolute, a host, no user info, at most 2,048 bytes.
        #"{"endpoint":"http://a.example/x","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#,
        #"{"endpoint":"/push/x","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#,
        #"{"endpoint":"https:///x","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#,
        #"{"endpoint":"https://user:pw@a.example/x","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#,
        #"{"endpoint":"https://a.example/\#(String(repeating: "x", count: 2048))","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#,
        #"{"endpoint":"https://a.example:99999/x","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#,
        // Ours: p256dh a 65-byte uncompressed point on P-256; auth 16 bytes.
        #"{"endpoint":"https://a.example/x","keys":{"p256dh":"\#(String(p256dh.prefix(60)) + "A" + String(p256dh.dropFirst(61)))","auth":"\#(auth)"}}"#,
        #"{"endpoint":"https://a.example/x","keys":{"p256dh":"\#(String(p256dh.prefix(44)))","auth":"\#(auth)"}}"#,
        #"{"endpoint":"https://a.example/x","keys":{"p256dh":"\#(p256dh.replacingOccurrences(of: "_", with: "/"))","auth":"\#(auth)"}}"#,
        #"{"endpoint":"https://a.example/x","keys":{"p256dh":"\#(p256dh)","auth":"BTBZMqHH6r4Tts7J_aSI"}}"#,
    ]

    @Test(arguments: invalid) func invalidBodiesAnswerTheJSHubsInvalidBody(_ body: String) async throws {
        let directory = TemporaryDirectory()
        let (routes, store) = try await routes(directory)
        #expect(await routes.subscribe(namespace: "ns", body: Array(body.utf8)) == PushDeviceRegistry.Answer(status: 400, body: #"{"error":"Invalid body"}"#))
        #expect(try await store.webSubscriptions(namespace: "ns").isEmpty)
    }

    @Test func acceptedShapes() {
        #expect(PushWebSubscriptions.decodeSubscription(body: Self.body(endpoint: "https://[::1]:8443/p?x=1")) != nil)
        #expect(PushWebSubscriptions.decodeSubscription(body: Self.body(endpoint: "https://A.Example/p")) != nil)
        #expect(PushWebSubscriptions.decodeSubscription(body: Self.body(p256dh: Self.p256dh + "=", auth: Self.auth + "==")) != nil)
        // Unknown keys are ignored, as zod does.
        let extra = #"{"endpoint":"\#(Self.endpoint)","expirationTime":null,"keys":{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)","x":1}}"#
        #expect(PushWebSubscriptions.decodeSubscription(body: Array(extra.utf8)) != nil)
        #expect(PushWebEndpoint.origin(of: "https://A.Example:8443/p/q") == "https://a.example:8443")
        #expect(PushWebEndpoint.origin(of: "https://[::1]/p") == "https://[::1]")
        #expect(PushWebSubscriptions.decodeUnsubscription(body: Array(#"{"endpoint":""}"#.utf8)) == nil)
        #expect(PushWebSubscriptions.decodeUnsubscription(body: Array("x".utf8)) == nil)
    }

    /// Issue 28 item 6: the four rules docs/wire.md did not name, each refused and its boundary
    /// accepted, and bracketed hosts checked as IPv6 addresses.
    @Test func theRulesTheJavaScriptHubDoesNotHaveEachAtItsBoundary() {
        func accepts(_ endpoint: String) -> Bool { PushWebSubscriptions.decodeSubscription(body: Self.body(endpoint: endpoint)) != nil }
        // JSON depth: 256 levels read, 257 not (a deep unknown member makes the body unreadable).
        func nested(_ depth: Int) -> [UInt8] {
            // The body's object and depth − 1 arrays: `depth` containers.
            let inner = String(repeating: "[", count: depth - 1) + "0" + String(repeating: "]", count: depth - 1)
            return Array(#"{"endpoint":"\#(Self.endpoint)","x":\#(inner),"keys":{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}}"#.utf8)
        }
        #expect(PushWebSubscriptions.decodeSubscription(body: nested(256)) != nil)
        #expect(PushWebSubscriptions.decodeSubscription(body: nested(257)) == nil)
        // Host: 253 characters of name, not 254.
        let label = String(repeating: "a", count: 63)
        let host253 = [label, label, label, String(repeating: "b", count: 61)].joined(separator: ".")
        #expect(host253.count == 253)
        #expect(accepts("https://\(host253)/x"))
        #expect(!accepts("https://\(host253)c/x"))
        // No backslash, in the path, the query or the authority.
        #expect(!accepts("https://a.example/x\\y"))
        #expect(!accepts("https://a.example/x?q=\\"))
        #expect(!accepts("https://a.example\\@b.example/x"))
        // Port: 1 to 5 digits, 1–65535.
        #expect(accepts("https://a.example:65535/x") && accepts("https://a.example:1/x"))
        #expect(!accepts("https://a.example:000443/x"))
        #expect(!accepts("https://a.example:0/x") && !accepts("https://a.example:65536/x") && !accepts("https://a.example:/x"))
        // Brackets hold an IPv6 address and nothing else.
        for good in ["[::1]", "[2001:db8::1]", "[::ffff:192.0.2.1]", "[1:2:3:4:5:6:7:8]", "[::]"] {
            #expect(accepts("https://\(good)/x"), "\(good)")
        }
        for bad in ["[1]", "[1::2::3]", "[1:2:3:4:5:6:7:8:9]", "[12345::1]", "[::1.2.3]", "[]", "[:]", "[::1]x", "[::1%25eth0]", "[fe80::1"] {
            #expect(!accepts("https://\(bad)/x"), "\(bad)")
        }
    }

    static let jsTable = """
        CREATE TABLE IF NOT EXISTS push_subscriptions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            namespace TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            p256dh TEXT NOT NULL,
            auth TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE(namespace, endpoint)
        )
        """

    @Test func createsTheJSHubsTableAndIndexExactly() async throws {
        let directory = TemporaryDirectory()
        _ = try await SQLitePushDeviceStore.open(directory: directory.path)
        let db = try SQLiteConnection(path: directory.file(SQLitePushDeviceStore.defaultFileName), busyTimeoutMilliseconds: 1000)
        let table = try db.query("SELECT sql FROM sqlite_master WHERE name = 'push_subscriptions'").first?.first?.text
        let index = try db.query("SELECT sql FROM sqlite_master WHERE name = 'idx_push_subscriptions_namespace'").first?.first?.text
        // SQLite stores the statement as written, minus IF NOT EXISTS.
        #expect(table == Self.jsTable.replacingOccurrences(of: "IF NOT EXISTS ", with: ""))
        #expect(index == "CREATE INDEX idx_push_subscriptions_namespace ON push_subscriptions(namespace)")
    }

    @Test func adoptsAnExistingHubDatabase() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("hapi.db")
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        do {
            let hub = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 1000)
            try hub.execute(Self.jsTable + ";CREATE INDEX IF NOT EXISTS idx_push_subscriptions_namespace ON push_subscriptions(namespace);")
            try hub.execute(
                """
                CREATE TABLE IF NOT EXISTS fcm_devices (id TEXT PRIMARY KEY, namespace TEXT NOT NULL, token TEXT NOT NULL, platform TEXT NOT NULL,
                device_id TEXT NOT NULL, push_key TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, UNIQUE(namespace, device_id, platform));
                INSERT INTO push_subscriptions (namespace, endpoint, p256dh, auth, created_at)
                VALUES ('ns', 'https://updates.push.services.mozilla.com/wpush/v2/old', '\(Self.p256dh)', '\(Self.auth)', 1000);
                """)
        }
        let store = try await SQLitePushDeviceStore.open(configuration: .init(path: path))
        let listed = try await store.webSubscriptions(namespace: "ns")
        #expect(listed == [PushWebSubscription(namespace: "ns", endpoint: "https://updates.push.services.mozilla.com/wpush/v2/old", p256dh: Self.p256dh, auth: Self.auth, createdAt: 1000)])
        #expect(listed.first?.origin == "https://updates.push.services.mozilla.com")
        #expect(listed.first.map { "\($0)" }?.contains("old") == false)
        try await store.addWebSubscription(namespace: "ns", endpoint: Self.endpoint, p256dh: Self.p256dh, auth: Self.auth, now: 2000)
        #expect(try await store.webSubscriptions(namespace: "ns").map(\.createdAt) == [2000, 1000])
        #expect(try await store.removeWebSubscription(namespace: "ns", endpoint: Self.endpoint))
        #expect(try await !store.removeWebSubscription(namespace: "ns", endpoint: Self.endpoint))
    }

    @Test func postgresKeepsSubscriptionsToo() async throws {
        let store = try await PostgresPushDeviceStore.open(configuration: try freshPostgresTable())
        let namespace = "ns-" + UUID().uuidString
        let routes = PushWebSubscriptions(store: store, vapidPublicKey: "BPUB")
        #expect(await routes.subscribe(namespace: namespace, body: Self.body()).status == 200)
        try await store.addWebSubscription(namespace: namespace, endpoint: Self.endpoint + "2", p256dh: Self.p256dh, auth: Self.auth, now: Int64.max / 2)
        #expect(try await store.webSubscriptions(namespace: namespace).map(\.endpoint) == [Self.endpoint + "2", Self.endpoint])
        try await store.addWebSubscription(namespace: namespace, endpoint: Self.endpoint, p256dh: Self.p256dh, auth: Self.auth, now: Int64.max / 2 + 1)
        #expect(try await store.webSubscriptions(namespace: namespace).map(\.endpoint) == [Self.endpoint, Self.endpoint + "2"])
        #expect(await routes.unsubscribe(namespace: namespace, body: Array(#"{"endpoint":"\#(Self.endpoint)"}"#.utf8)).status == 200)
        #expect(try await store.webSubscriptions(namespace: namespace).count == 1)
        #expect(try await store.removeWebSubscription(namespace: namespace, endpoint: Self.endpoint + "2"))
        #expect(await routes.subscribe(namespace: namespace, body: Array("{}".utf8)).status == 400)
    }
}
