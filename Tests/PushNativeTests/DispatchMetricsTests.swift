import Foundation
import PushHTTP
import PushLoopbackServer
import PushSync
import PushTestSupport
import Testing

import DeviceRegistry
import PushEnvelope
import PushTransports
@testable import PushNative

/// Issue 12, items 2 and 5: a dispatch counts every device (transport × outcome × reason),
/// times every send per transport, returns the in-flight gauge to zero, renders all of it as
/// Prometheus text, and reports a dead token it could not prune in the delivery, the log and
/// the metrics; reasons are typed values with the provider's message apart.
@Suite struct DispatchMetricsTests {
    @Test func aDispatchIsCountedTimedAndRenderedAsPrometheusText() async throws {
        let providers = try LoopbackProviders()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-metrics-\(UUID().uuidString)").path
        defer {
            providers.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let metrics = PushPrometheusMetrics()
        let environment = providers.environment(iosMode: "relay", androidMode: "relay", dataDirectory: directory)
        let configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory)
        let push = try NativePush(configuration: configuration, store: InMemoryPushDeviceStore(), metrics: metrics)
        let key = try PushKey.generate()
        for (platform, id, token, pushKey) in [
            ("ios", "iphone", String(repeating: "ab", count: 32), key.base64 as String?), ("phone", "pixel-key", "fcm-phone-key", key.base64),
            ("phone", "pixel-old", "fcm-phone-nokey", nil), ("wear", "watch", "fcm-wear", nil),
        ] {
            try await push.registry.register(try PushRegistrationRequest(namespace: "ns", platform: platform, deviceId: id, token: token, pushKey: pushKey))
        }
        let report = try await push.dispatch(readyPayload, namespace: "ns")
        await push.shutdown()

        // Typed end to end.
        let byId = Dictionary(uniqueKeysWithValues: report.deliveries.map { ($0.deviceId, $0) })
        #expect(byId["iphone"]?.transport == .relay)
        #expect(byId["iphone"]?.reason == nil)
        #expect(byId["pixel-old"]?.reason == .missingPushKey)
        #expect(byId["watch"]?.reason == .wearRelayUnsupported)

        let text = metrics.render()
        #expect(text.contains("# TYPE hapi_push_deliveries_total counter\n"), "\(text)")
        #expect(text.contains(#"hapi_push_deliveries_total{transport="relay",outcome="sent",reason="none"} 2"#), "\(text)")
        #expect(text.contains(#"hapi_push_deliveries_total{transport="relay",outcome="skipped",reason="missing_push_key"} 1"#), "\(text)")
        #expect(text.contains(#"hapi_push_deliveries_total{transport="relay",outcome="skipped",reason="wear_relay_unsupported"} 1"#), "\(text)")
        #expect(text.contains("# TYPE hapi_push_delivery_duration_seconds histogram\n"), "\(text)")
        #expect(text.contains(#"hapi_push_delivery_duration_seconds_count{transport="relay"} 2"#), "\(text)")
        #expect(text.contains(#"hapi_push_delivery_duration_seconds_bucket{transport="relay",le="+Inf"} 2"#), "\(text)")
        #expect(text.contains("# TYPE hapi_push_requests_in_flight gauge\n"), "\(text)")
        #expect(text.contains(#"hapi_push_requests_in_flight{transport="relay"} 0"#), "\(text)")
        // Every sample line is `name{labels} value` or `name value`.
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            #expect(parts.count == 2 && Double(parts[1]) != nil, "\(line)")
        }
    }

    /// A relay that says the token is dead, a store that cannot prune: the failure is in the
    /// delivery (and `--json` as `pruneError`), in the log and in the metrics, never dropped.
    @Test func aFailedPruneIsReportedLoggedAndCounted() async throws {
        let relay = try RecordingServer { _ in .text(status: 410, #"{"ok":false,"code":"unregistered"}"#) }
        defer { relay.stop() }
        let client = try HTTPClient(configuration: .init(requestTimeout: .seconds(5), additionalTrustedCAFile: relay.caFile))
        let store = PruneFailingStore()
        let key = try PushKey.generate()
        let token = String(repeating: "ab", count: 32)
        _ = try await store.upsert(try PushRegistrationRequest(namespace: "ns", platform: "ios", deviceId: "iphone", token: token, pushKey: key.base64), now: 1)
        let logger = TextCapturingLogger()
        let metrics = PushPrometheusMetrics()
        let transport = RelayTransport(baseURL: relay.baseURL, client: client)
        let dispatcher = PushDispatcher(store: store, ios: .encrypted(transport), android: .off(reason: "x"), logger: logger, metrics: metrics)

        let report = try await dispatcher.dispatch(readyPayload, namespace: "ns")
        await client.shutdown()

        let delivery = try #require(report.deliveries.first)
        #expect(delivery.outcome == .invalid)
        #expect(delivery.reason == .unregistered)
        #expect(delivery.pruned == false)
        #expect(delivery.pruneFailure?.contains("disk on fire") == true, "\(delivery)")
        #expect(report.jsonValue["deliveries"]?.arrayValue?.first?["pruneError"]?.stringValue == delivery.pruneFailure)
        #expect(logger.text.contains("prune_failed=") && logger.text.contains("disk on fire"), "\(logger.text)")
        #expect(!logger.text.contains(token))
        #expect(metrics.render().contains(#"hapi_push_prune_failures_total{transport="relay"} 1"#), "\(metrics.render())")
        #expect(metrics.render().contains(#"hapi_push_deliveries_total{transport="relay",outcome="invalid",reason="unregistered"} 1"#))
    }

    /// The in-flight meter counts a request while the provider holds it, and only then.
    @Test func requestsInFlightAreCountedWhileTheProviderHoldsThem() async throws {
        let release = Locked(false)
        let relay = try RecordingServer { _ in
            let deadline = ContinuousClock.now + .seconds(10)
            while !release.withLock({ $0 }), ContinuousClock.now < deadline { usleep(2_000) }
            return .json(#"{"ok":true}"#)
        }
        defer {
            release.withLock { $0 = true }
            relay.stop()
        }
        let client = try HTTPClient(configuration: .init(requestTimeout: .seconds(15), additionalTrustedCAFile: relay.caFile))
        let metrics = PushPrometheusMetrics()
        let store = InMemoryPushDeviceStore()
        let key = try PushKey.generate()
        _ = store.upsert(
            try PushRegistrationRequest(namespace: "ns", platform: "ios", deviceId: "iphone", token: String(repeating: "ab", count: 32), pushKey: key.base64), now: 1)
        let transport = RelayTransport(baseURL: relay.baseURL, client: client, metrics: metrics)
        let dispatcher = PushDispatcher(store: store, ios: .encrypted(transport), android: .off(reason: "x"), metrics: metrics)
        let gauge = #"hapi_push_requests_in_flight{transport="relay"} "#
        #expect(metrics.render().contains(gauge + "0\n"))

        let running = Task { try await dispatcher.dispatch(readyPayload, namespace: "ns") }
        let deadline = ContinuousClock.now + .seconds(10)
        while !metrics.render().contains(gauge + "1\n"), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(metrics.render().contains(gauge + "1\n"), "\(metrics.render())")
        release.withLock { $0 = true }
        let report = try await running.value
        await client.shutdown()
        #expect(report.count(.sent) == 1)
        #expect(metrics.render().contains(gauge + "0\n"))
    }

    @Test func prometheusTextEscapesLabelsAndBoundsSeries() {
        let metrics = PushPrometheusMetrics()
        metrics.makeCounter(label: "hapi push/odd", dimensions: [("reason", "a\"b\\c\nd")]).increment(by: 3)
        for index in 0..<(PushPrometheusMetrics.maximumSeriesPerMetric + 5) {
            metrics.makeCounter(label: "many", dimensions: [("reason", "r\(index)")]).increment(by: 1)
        }
        let gauge = metrics.makeMeter(label: "g", dimensions: [])
        gauge.increment(by: 2)
        gauge.decrement(by: 0.5)
        let text = metrics.render()
        #expect(text.contains(#"hapi_push_odd{reason="a\"b\\c\nd"} 3"#), "\(text)")
        #expect(text.contains(#"many{reason="other"} 5"#))
        #expect(text.components(separatedBy: "\nmany{").count - 1 == PushPrometheusMetrics.maximumSeriesPerMetric + 1)
        #expect(text.contains("g 1.5\n"))
        // A label reused for another kind is counted nowhere, and nothing crashes.
        metrics.makeTimer(label: "g", dimensions: []).recordNanoseconds(5)
        #expect(!metrics.render().contains("g_count"))
    }

    @Test func reasonsAreTypedWithTheProvidersMessageApart() {
        let fcm = FCMProvider.parse(
            status: 404, body: Array(#"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#.utf8))
        #expect(fcm.reason == PushDeliveryReason(rawValue: "NOT_FOUND"))
        #expect(fcm.detail == "Requested entity was not found.")
        #expect(fcm.reasonText == "NOT_FOUND: Requested entity was not found.")
        let gone = FCMProvider.parse(status: 404, body: Array(#"{"error":{"status":"UNREGISTERED"}}"#.utf8))
        #expect(gone.reason == .fcmUnregistered)
        let apns = APNsProvider.parse(status: 400, body: Array(#"{"reason":"BadCollapseId"}"#.utf8))
        #expect(apns.reason == "BadCollapseId")
        #expect(apns.detail == nil)
        #expect(APNsProvider.parse(status: 410, body: Array(#"{"reason":"Unregistered"}"#.utf8)).reason == .apnsUnregistered)
        #expect(RelayProvider.parse(status: 503, body: []).reason == .http(503))
        #expect(PushDeliveryReason.apnsExpiredProviderToken.text(detail: "refresh failed: x") == "ExpiredProviderToken; refresh failed: x")
        #expect(PushDeliveryReason.channelOff.text(detail: "HAPI_IOS_PUSH=off") == "channel_off: HAPI_IOS_PUSH=off")
    }
}

/// A store whose prune always fails (the disk is gone), everything else in memory.
final class PruneFailingStore: PushDeviceStore {
    let inner = InMemoryPushDeviceStore()
    func upsert(_ request: PushRegistrationRequest, now: Int64) async throws -> PushDeviceRegistration { inner.upsert(request, now: now) }
    func unregister(namespace: String, token: String) async throws -> Bool { inner.unregister(namespace: namespace, token: token) }
    func prune(namespace: String, token: String, notAfter: Int64?) async throws -> Bool {
        throw PushDeviceStoreError.failure.with("device database: disk on fire")
    }
    func devices(namespace: String, platforms: Set<PushDevicePlatform>?) async throws -> [PushDeviceRegistration] {
        inner.devices(namespace: namespace, platforms: platforms)
    }
}
