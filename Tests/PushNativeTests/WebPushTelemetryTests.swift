import DeviceRegistry
import Foundation
import PushEnvelope
import PushLoopbackServer
import PushTestSupport
import PushTransports
import Testing

@testable import PushNative

/// Issue 27 item 2 (part): a Web Push delivery reaches the `PushLogger`, the metrics and
/// `pruneFailure` the way a native one does, the endpoint (a capability) shown only as its
/// 12-hex fingerprint.
@Suite(.serialized) struct WebPushTelemetryTests {
    static let session = PushSession(id: "s1", metadata: ["flavor": "claude", "name": "hapi"])

    /// A real SQLite store whose delete of a subscription fails, the error naming the endpoint
    /// (as a careless driver message might): the report, the log and the metrics say so.
    final class RemoveFailingStore: PushDeviceStore, PushWebSubscriptionStore {
        let inner: SQLitePushDeviceStore
        init(directory: String) throws { inner = try SQLitePushDeviceStore(directory: directory) }
        func upsert(_ request: PushRegistrationRequest, now: Int64) async throws -> PushDeviceRegistration { try await inner.upsert(request, now: now) }
        func unregister(namespace: String, token: String) async throws -> Bool { try await inner.unregister(namespace: namespace, token: token) }
        func prune(namespace: String, token: String, notAfter: Int64?) async throws -> Bool {
            try await inner.prune(namespace: namespace, token: token, notAfter: notAfter)
        }
        func devices(namespace: String, platforms: Set<PushDevicePlatform>?) async throws -> [PushDeviceRegistration] {
            try await inner.devices(namespace: namespace, platforms: platforms)
        }
        func addWebSubscription(namespace: String, endpoint: String, p256dh: String, auth: String, now: Int64) async throws {
            try await inner.addWebSubscription(namespace: namespace, endpoint: endpoint, p256dh: p256dh, auth: auth, now: now)
        }
        func removeWebSubscription(namespace: String, endpoint: String) async throws -> Bool {
            throw PushDeviceStoreError.failure.with("device database: disk on fire deleting \(endpoint)")
        }
        func webSubscriptions(namespace: String) async throws -> [PushWebSubscription] { try await inner.webSubscriptions(namespace: namespace) }
    }

    struct World {
        let server: LoopbackServer
        let directory: String
        let push: NativePush
        let logger = TextCapturingLogger()
        let metrics = PushPrometheusMetrics()
        let endpoint: String

        init(status: Int, failingRemove: Bool = false) async throws {
            server = try LoopbackServer { _ in .init(status: status) }
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-webpush-telemetry-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let environment = [
                "HAPI_HOME": directory, "HAPI_PUSH_CA_FILE": server.caCertificatePath ?? "", "HAPI_PUSH_RELAY_URL": server.baseURL,
                "HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS": "1",
            ]
            let configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: false)
            let store: any PushDeviceStore =
                failingRemove ? try RemoveFailingStore(directory: directory) : try SQLitePushDeviceStore(directory: directory)
            push = try NativePush(configuration: configuration, store: store, logger: logger, metrics: metrics, dataDirectory: directory)
            endpoint = server.baseURL + "/wpush/v2/capability-" + UUID().uuidString
            let browser = try #require(WebPushTestBrowser())
            let routes = try #require(push.webPush)
            let answer = await routes.subscribe(namespace: "ns", body: Array(browser.subscribeBody(endpoint: endpoint).utf8))
            #expect(answer.status == 200, "\(answer.body)")
        }

        func send() async throws -> PushWebPushReport {
            try await push.sendWebPush(PushNotificationComposer.webReady(for: WebPushTelemetryTests.session), namespace: "ns", nativeSent: false)
        }

        func stop() async {
            await push.shutdown()
            server.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// Neither the endpoint nor its path (the capability) in any record or in the report.
        func expectNoEndpoint(_ report: PushWebPushReport) {
            let path = String(endpoint.dropFirst(server.baseURL.count))
            for text in [logger.text, metrics.render(), report.jsonValue.canonicalString, "\(report)"] {
                #expect(!text.contains(endpoint) && !text.contains(path), "\(text)")
            }
        }
    }

    @Test func aDeliveryIsLoggedAndCounted() async throws {
        let world = try await World(status: 201)
        let report = try await world.send()
        await world.stop()
        let delivery = try #require(report.deliveries.first)
        #expect(delivery.outcome == .sent)
        #expect(world.logger.count == 1, "\(world.logger.text)")
        let fingerprint = TokenFingerprint.of(world.endpoint)
        #expect(fingerprint.count == 12 && delivery.fingerprint == fingerprint)
        #expect(world.logger.text.contains("push platform=web transport=webpush token=\(fingerprint) outcome=sent status=201 ms="), "\(world.logger.text)")
        let text = world.metrics.render()
        #expect(text.contains(#"hapi_push_deliveries_total{transport="webpush",outcome="sent",reason="none"} 1"#), "\(text)")
        #expect(text.contains(#"hapi_push_delivery_duration_seconds_count{transport="webpush"} 1"#), "\(text)")
        #expect(text.contains(#"hapi_push_requests_in_flight{transport="webpush"} 0"#), "\(text)")
        world.expectNoEndpoint(report)
    }

    @Test func aGoneSubscriptionIsLoggedCountedAndRemoved() async throws {
        let world = try await World(status: 410)
        let report = try await world.send()
        let left = try await world.push.webPush?.store.webSubscriptions(namespace: "ns").count
        await world.stop()
        let delivery = try #require(report.deliveries.first)
        #expect(delivery.outcome == .invalid && delivery.removed && delivery.pruneFailure == nil)
        #expect(left == 0)
        #expect(world.logger.count == 1)
        #expect(world.logger.text.contains("transport=webpush token=\(delivery.fingerprint) outcome=invalid status=410 reason=subscription_gone"))
        #expect(world.metrics.render().contains(#"hapi_push_deliveries_total{transport="webpush",outcome="invalid",reason="subscription_gone"} 1"#))
        #expect(!world.metrics.render().contains("hapi_push_prune_failures_total{"))
        world.expectNoEndpoint(report)
    }

    /// The push service says the subscription is gone, the store cannot delete it: reported
    /// in the delivery (`--json` `pruneError`), logged and counted, never swallowed.
    @Test func aFailedPruneIsReportedLoggedAndCounted() async throws {
        let world = try await World(status: 410, failingRemove: true)
        let report = try await world.send()
        let left = try await world.push.webPush?.store.webSubscriptions(namespace: "ns").count
        await world.stop()
        let delivery = try #require(report.deliveries.first)
        #expect(delivery.outcome == .invalid && !delivery.removed)
        #expect(left == 1)
        let failure = try #require(delivery.pruneFailure)
        #expect(failure.contains("disk on fire") && failure.contains("[redacted]"), "\(failure)")
        let json = try #require(report.jsonValue["deliveries"]?.arrayValue?.first)
        #expect(json["pruneError"]?.stringValue == failure)
        #expect(world.logger.count == 2, "\(world.logger.text)")
        #expect(world.logger.text.contains("transport=webpush token=\(delivery.fingerprint) outcome=invalid status=410"), "\(world.logger.text)")
        #expect(world.logger.text.contains("prune_failed=") && world.logger.text.contains("disk on fire"), "\(world.logger.text)")
        let text = world.metrics.render()
        #expect(text.contains(#"hapi_push_prune_failures_total{transport="webpush"} 1"#), "\(text)")
        #expect(text.contains(#"hapi_push_deliveries_total{transport="webpush",outcome="invalid",reason="subscription_gone"} 1"#), "\(text)")
        world.expectNoEndpoint(report)
    }
}
