import Foundation
import PushLoopbackServer
import PushTestSupport
import Testing

import PushTransports
import DeviceRegistry
import PushEnvelope
@testable import PushNative

/// A hub wired to loopback stand-ins, with an SQLite registry on a real file.
final class Hub: @unchecked Sendable {
    let providers: LoopbackProviders
    let directory: String
    let push: NativePush
    let iosKey: PushKey
    let phoneKey: PushKey
    static let iosToken = String(repeating: "ab", count: 32)

    init(ios: String = "relay", android: String = "relay", providers: LoopbackProviders? = nil, timeout: Duration = .seconds(5)) throws {
        self.providers = try providers ?? LoopbackProviders()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-hub-\(UUID().uuidString)").path
        let environment = self.providers.environment(iosMode: ios, androidMode: android, dataDirectory: directory)
        let configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory)
        push = try NativePush(configuration: configuration, store: try SQLitePushDeviceStore(directory: directory),
            runtime: NativePush.Configuration(timeouts: .init(request: timeout)))
        iosKey = try PushKey.generate()
        phoneKey = try PushKey.generate()
    }

    /// An iPhone, a phone with a key, a phone without, and a watch.
    func registerFourDevices(namespace: String = "ns") async throws {
        for (platform, id, token, key) in [
            ("ios", "iphone", Hub.iosToken, iosKey.base64 as String?), ("phone", "pixel-key", "fcm-phone-key", phoneKey.base64),
            ("phone", "pixel-old", "fcm-phone-nokey", nil), ("wear", "watch", "fcm-wear", nil),
        ] {
            let request = try PushRegistrationRequest(namespace: namespace, platform: platform, deviceId: id, token: token, pushKey: key)
            try await push.registry.register(request)
        }
    }

    func stop() async {
        await push.shutdown()
        providers.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    func delivery(_ report: PushDispatchReport, _ deviceId: String) -> PushDispatchReport.Delivery? {
        report.deliveries.first { $0.deviceId == deviceId }
    }
}

let readyPayload = PushNotificationComposer.ready(
    for: PushSession(id: "s-1", metadata: ["flavor": "claude", "name": "hapi"]), messages: [HubFixture.agent("done\nAGENT_NOTIFY_SUMMARY {\"summary\":\"ok\"}")])

@Suite struct DispatchModeTests {
    @Test func relayForBoth() async throws {
        let hub = try Hub(ios: "relay", android: "relay")
        try await hub.registerFourDevices()
        let report = try await hub.push.dispatch(readyPayload, namespace: "ns")
        await hub.stop()
        #expect(hub.delivery(report, "iphone")?.outcome == .sent)
        #expect(hub.delivery(report, "iphone")?.transport == .relay)
        #expect(hub.delivery(report, "pixel-key")?.outcome == .sent)
        #expect(hub.delivery(report, "pixel-old")?.outcome == .skipped)
        #expect(hub.delivery(report, "pixel-old")?.reasonText == "missing_push_key")
        #expect(hub.delivery(report, "watch")?.outcome == .skipped)
        #expect(hub.delivery(report, "watch")?.reasonText == "wear_relay_unsupported")
        #expect(report.suppressWebPush)
        // The relay saw ciphertext only; each device opens its own envelope to the payload.
        let requests = hub.providers.relay.requests
        #expect(requests.count == 2)
        for request in requests {
            let body = try JSONParser.parse(request.body)
            let envelope = try #require(body["envelope"]?.stringValue)
            #expect(!request.bodyString.contains("Claude"))
            let key = body["platform"] == "ios" ? hub.iosKey : hub.phoneKey
            #expect(try ReceivedPush.decode(version: "1", envelope: envelope, key: key) == readyPayload)
        }
        #expect(Set(requests.map { try? JSONParser.parse($0.body)["platform"]?.stringValue }) == ["ios", "android"])
    }

    @Test func directAPNsAndDirectFCM() async throws {
        let hub = try Hub(ios: "apns", android: "fcm")
        try await hub.registerFourDevices()
        let report = try await hub.push.dispatch(readyPayload, namespace: "ns")
        await hub.stop()
        for id in ["iphone", "pixel-key", "pixel-old", "watch"] {
            #expect(hub.delivery(report, id)?.outcome == .sent, "\(id): \(String(describing: hub.delivery(report, id)))")
        }
        #expect(hub.delivery(report, "iphone")?.transport == .apns)
        #expect(hub.delivery(report, "watch")?.transport == .fcm)
        let apns = try #require(hub.providers.apns.requests.first)
        let e = try #require(try JSONParser.parse(apns.body)["hapi"]?["e"]?.stringValue)
        #expect(try ReceivedPush.decode(version: "1", envelope: e, key: hub.iosKey) == readyPayload)
        let sends = hub.providers.fcm.requests.filter { $0.path != "/token" }
        #expect(sends.count == 3)
        for send in sends {
            let data = try #require(try JSONParser.parse(send.body)["message"]?["data"])
            #expect(try PushNotificationPayload(jsonObject: data) == readyPayload)
        }
        #expect(sends.filter { $0.bodyString.contains("direct_boot_ok") }.count == 1)
        #expect(hub.providers.fcm.requests.filter { $0.path == "/token" }.count == 1)
    }

    @Test(arguments: [("off", "off"), ("off", "relay"), ("apns", "off"), ("relay", "fcm"), ("apns", "relay"), ("off", "fcm"), ("relay", "off")])
    func everyModeCombination(_ ios: String, _ android: String) async throws {
        let hub = try Hub(ios: ios, android: android)
        try await hub.registerFourDevices()
        let report = try await hub.push.dispatch(readyPayload, namespace: "ns")
        await hub.stop()
        let iphone = try #require(hub.delivery(report, "iphone"))
        if ios == "off" {
            #expect(iphone.outcome == .skipped)
            #expect(iphone.reasonText?.hasPrefix("channel_off") == true)
        } else {
            #expect(iphone.outcome == .sent)
            #expect(iphone.transport.rawValue == ios)
        }
        for id in ["pixel-key", "pixel-old", "watch"] {
            let delivery = try #require(hub.delivery(report, id))
            switch android {
            case "off":
                #expect(delivery.outcome == .skipped, "\(id)")
                #expect(delivery.reasonText?.hasPrefix("channel_off") == true)
            case "fcm":
                #expect(delivery.outcome == .sent, "\(id)")
            default:
                #expect(delivery.outcome == (id == "pixel-key" ? .sent : .skipped), "\(id)")
            }
        }
        #expect(report.suppressWebPush == (report.count(.sent) > 0))
    }
}

@Suite struct DispatchPruningAndGateTests {
    @Test func invalidPrunesOnlyThatToken() async throws {
        let hub = try Hub(ios: "relay", android: "relay")
        try await hub.registerFourDevices()
        try await hub.push.registry.register(
            try PushRegistrationRequest(namespace: "other", platform: "phone", deviceId: "x", token: "fcm-other", pushKey: hub.phoneKey.base64))
        hub.providers.relay.respond { request in
            request.bodyString.contains(Hub.iosToken)
                ? .text(status: 410, #"{"ok":false,"code":"unregistered"}"#) : .text(status: 500, #"{"ok":false,"code":"upstream"}"#)
        }
        let report = try await hub.push.dispatch(readyPayload, namespace: "ns")
        let iphone = try #require(hub.delivery(report, "iphone"))
        #expect(iphone.outcome == .invalid)
        #expect(iphone.pruned)
        let phone = try #require(hub.delivery(report, "pixel-key"))
        #expect(phone.outcome == .failed)
        #expect(!phone.pruned)
        #expect(!report.suppressWebPush)
        let remaining = try await hub.push.registry.store.devices(namespace: "ns").map(\.deviceId)
        #expect(Set(remaining) == ["pixel-key", "pixel-old", "watch"])
        #expect(try await hub.push.registry.store.devices(namespace: "other").count == 1)
        await hub.stop()
    }

    @Test func apnsTimestampSparesAFresherRegistration() async throws {
        let hub = try Hub(ios: "apns", android: "off")
        try await hub.registerFourDevices()
        hub.providers.apns.respond { _ in .text(status: 410, #"{"reason":"Unregistered","timestamp":1000}"#) }
        let report = try await hub.push.dispatch(readyPayload, namespace: "ns")
        await hub.stop()
        #expect(hub.delivery(report, "iphone")?.outcome == .invalid)
        #expect(hub.delivery(report, "iphone")?.pruned == false)
    }

    @Test func gateForAllSomeNoneAndNoDevices() async throws {
        let hub = try Hub(ios: "relay", android: "relay")
        #expect(try await hub.push.dispatch(readyPayload, namespace: "ns").suppressWebPush == false)  // no devices
        try await hub.registerFourDevices()
        #expect(try await hub.push.dispatch(readyPayload, namespace: "ns").suppressWebPush)  // some sent, some skipped
        hub.providers.relay.respond { request in
            request.bodyString.contains("android") ? .text(status: 429, #"{"code":"rate_limited"}"#) : .json(#"{"ok":true}"#)
        }
        #expect(try await hub.push.dispatch(readyPayload, namespace: "ns").suppressWebPush)  // some sent
        hub.providers.relay.respond { _ in .text(status: 502, #"{"code":"upstream"}"#) }
        let none = try await hub.push.dispatch(readyPayload, namespace: "ns")
        #expect(!none.suppressWebPush)
        #expect(none.count(.failed) == 2)
        #expect(none.count(.skipped) == 2)
        await hub.stop()

        let skipsOnly = try Hub(ios: "off", android: "relay")
        try await skipsOnly.push.registry.register(
            try PushRegistrationRequest(namespace: "ns", platform: "wear", deviceId: "w", token: "t", pushKey: nil))
        try await skipsOnly.push.registry.register(
            try PushRegistrationRequest(namespace: "ns", platform: "ios", deviceId: "i", token: Hub.iosToken, pushKey: skipsOnly.iosKey.base64))
        let report = try await skipsOnly.push.dispatch(readyPayload, namespace: "ns")
        #expect(report.count(.skipped) == 2)
        #expect(!report.suppressWebPush)
        await skipsOnly.stop()
    }

    @Test func unreadableRegistryThrows() async throws {
        struct BrokenStore: PushDeviceStore {
            struct Broken: Error {}
            func upsert(_ request: PushRegistrationRequest, now: Int64) async throws -> PushDeviceRegistration { throw Broken() }
            func unregister(namespace: String, token: String) async throws -> Bool { throw Broken() }
            func prune(namespace: String, token: String, notAfter: Int64?) async throws -> Bool { throw Broken() }
            func devices(namespace: String, platforms: Set<PushDevicePlatform>?) async throws -> [PushDeviceRegistration] { throw Broken() }
        }
        let dispatcher = PushDispatcher(store: BrokenStore(), ios: .off(reason: "x"), android: .off(reason: "x"))
        await #expect(throws: BrokenStore.Broken.self) { try await dispatcher.dispatch(readyPayload, namespace: "ns") }
    }
}

@Suite struct SizeLadderTests {
    /// A ready payload whose canonical JSON is exactly `bytes` long, padded in notifySummary.
    func payload(canonicalBytes bytes: Int, body: String = "Ready for input") throws -> PushNotificationPayload {
        var payload = PushNotificationPayload(type: .ready, sessionId: "s-1", title: "HAPI", body: body, notifySummary: "")
        let base = payload.canonicalJSON.count
        try #require(bytes >= base)
        payload.notifySummary = String(repeating: "x", count: bytes - base)
        #expect(payload.canonicalJSON.count == bytes)
        return payload
    }

    @Test func envelopeLadderAtItsExactBoundary() throws {
        // 4·⌈(n+28)/3⌉ ≤ 3200 ⇔ n ≤ 2372.
        let exact = try payload(canonicalBytes: 2372)
        #expect(PushEnvelopeCipher.sealedLength(plaintextCount: 2372) == 3200)
        #expect(PayloadFitter.fitEnvelope(exact)?.1 == .full)
        let over = try payload(canonicalBytes: 2373)
        let fitted = try #require(PayloadFitter.fitEnvelope(over))
        #expect(fitted.1 == .withoutSummary)
        #expect(fitted.0.notifySummary == nil)
        #expect(fitted.0.body == over.body)
    }

    @Test func minimalKeepsTheRoutingIds() throws {
        let big = PushNotificationPayload(
            type: .permissionRequest, sessionId: "s-1", sessionName: "n", url: "/sessions/s-1", requestId: "req-7", title: "t",
            body: String(repeating: "b", count: 5000), severity: .warning, notifySummary: "{}")
        let (minimal, level) = try #require(PayloadFitter.fitEnvelope(big))
        #expect(level == .minimal)
        #expect(minimal == PushNotificationPayload(type: .permissionRequest, sessionId: "s-1", requestId: "req-7", title: "HAPI", body: "New activity"))
        let impossible = PushNotificationPayload(type: .ready, sessionId: String(repeating: "s", count: 4000), title: "t", body: "b")
        #expect(PayloadFitter.fitEnvelope(impossible) == nil)
    }

    @Test func fcmLadderAt4096Bytes() throws {
        #expect(PayloadFitter.fitFCMData(try payload(canonicalBytes: 4096))?.1 == .full)
        #expect(PayloadFitter.fitFCMData(try payload(canonicalBytes: 4097))?.1 == .withoutSummary)
    }

    @Test func dispatchReportsTheLadderAndNeverTruncatesCiphertext() async throws {
        let hub = try Hub(ios: "relay", android: "fcm")
        try await hub.registerFourDevices()
        let exact = try payload(canonicalBytes: 2372)
        let report = try await hub.push.dispatch(exact, namespace: "ns")
        #expect(hub.delivery(report, "iphone")?.payload == .full)
        let relayed = try #require(hub.providers.relay.requests.first)
        let envelope = try #require(try JSONParser.parse(relayed.body)["envelope"]?.stringValue)
        #expect(envelope.utf8.count == 3200)
        #expect(try ReceivedPush.decode(version: "1", envelope: envelope, key: hub.iosKey) == exact)
        hub.providers.clearRequests()

        let over = try payload(canonicalBytes: 2373)
        let reduced = try await hub.push.dispatch(over, namespace: "ns")
        #expect(hub.delivery(reduced, "iphone")?.payload == .withoutSummary)
        #expect(hub.delivery(reduced, "pixel-key")?.payload == .full)  // FCM's limit is 4096
        hub.providers.clearRequests()

        let impossible = PushNotificationPayload(type: .ready, sessionId: String(repeating: "s", count: 5000), title: "t", body: "b")
        let failed = try await hub.push.dispatch(impossible, namespace: "ns")
        #expect(hub.delivery(failed, "iphone")?.outcome == .failed)
        #expect(hub.delivery(failed, "iphone")?.reasonText == "too_large")
        #expect(hub.delivery(failed, "watch")?.reasonText == "too_large")
        #expect(hub.providers.relay.requests.isEmpty)
        #expect(try await hub.push.registry.store.devices(namespace: "ns").count == 4)
        await hub.stop()
    }
}

@Suite struct DispatchScaleTests {
    @Test func fiveHundredDevicesOverOneConnectionPerEndpoint() async throws {
        let hub = try Hub(ios: "apns", android: "relay")
        let key = hub.iosKey.base64
        for i in 0..<250 {
            let token = String(repeating: "0", count: 60) + String(String(i, radix: 16).reversed()).padding(toLength: 4, withPad: "0", startingAt: 0)
            try await hub.push.registry.register(try PushRegistrationRequest(namespace: "big", platform: "ios", deviceId: "i\(i)", token: token, pushKey: key))
            try await hub.push.registry.register(
                try PushRegistrationRequest(namespace: "big", platform: "phone", deviceId: "p\(i)", token: "phone-\(i)", pushKey: key))
        }
        let report = try await hub.push.dispatch(readyPayload, namespace: "big")
        await hub.stop()
        #expect(report.deliveries.count == 500)
        #expect(report.count(.sent) == 500)
        #expect(hub.providers.apns.server.connectionsAccepted == 1)
        #expect(hub.providers.relay.server.connectionsAccepted == 1)
        #expect(hub.providers.apns.requests.count == 250)
        #expect(hub.providers.relay.requests.count == 250)
        // Fresh nonce per device: no two envelopes share one.
        let nonces = Set(hub.providers.relay.requests.compactMap { request -> [UInt8]? in
            guard let envelope = try? JSONParser.parse(request.body)["envelope"]?.stringValue else { return nil }
            return (try? Base64.decode(envelope)).map { Array($0.prefix(12)) }
        })
        #expect(nonces.count == 250)
    }

    @Test func oneSlowDeviceDoesNotHoldTheOthers() async throws {
        let hub = try Hub(ios: "relay", android: "relay", timeout: .seconds(1))
        try await hub.registerFourDevices()
        hub.providers.relay.respond { request in
            request.bodyString.contains("android") ? .action(.neverRespond) : .json(#"{"ok":true}"#)
        }
        let clock = ContinuousClock()
        let start = clock.now
        let report = try await hub.push.dispatch(readyPayload, namespace: "ns")
        let elapsed = clock.now - start
        await hub.stop()
        #expect(hub.delivery(report, "iphone")?.outcome == .sent)
        #expect(hub.delivery(report, "pixel-key")?.outcome == .failed)
        #expect(hub.delivery(report, "pixel-key")?.reasonText == "timeout")
        #expect(elapsed < .seconds(3))
    }
}
