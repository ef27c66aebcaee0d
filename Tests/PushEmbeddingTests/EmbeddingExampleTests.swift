import Foundation
import PushEcosystemStandIns
import PushNative
import PushTestSupport
import Testing

// The README's "Embedding in a Hummingbird or Vapor hub" code, verbatim: compiled here against
// stand-ins of swift-log, swift-metrics, swift-service-lifecycle and a router (a real hub
// imports Logging, Metrics, ServiceLifecycle and Hummingbird instead), and checked to be what
// the README shows.
// README-EMBEDDING-BEGIN
/// swift-log: one structured line per push (a token fingerprint, never the token).
struct SwiftLogPushLogger: PushLogger {
    let logger: Logger

    func log(_ record: PushLogRecord) {
        var metadata: Logger.Metadata = [
            "platform": .string(record.platform), "transport": .string(record.transport.rawValue),
            "token": .string(record.tokenHash), "outcome": .string(record.outcome.rawValue), "ms": .string("\(record.milliseconds)"),
        ]
        if let reason = record.reasonText { metadata["reason"] = .string(reason) }
        if let failure = record.pruneFailure { metadata["pruneFailure"] = .string(failure) }
        logger.log(level: record.outcome == .sent ? .debug : .notice, "push", metadata: metadata)
    }
}

/// swift-metrics: every counter, timer and meter goes to the factory the hub bootstrapped
/// (`MetricsSystem.factory`).
struct SwiftMetricsPushFactory: PushMetricsFactory {
    let factory: any MetricsFactory

    func makeCounter(label: String, dimensions: [(String, String)]) -> any PushCounterHandler {
        Counter(handler: factory.makeCounter(label: label, dimensions: dimensions))
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any PushTimerHandler {
        Timer(handler: factory.makeTimer(label: label, dimensions: dimensions))
    }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any PushMeterHandler {
        Meter(handler: factory.makeMeter(label: label, dimensions: dimensions))
    }

    final class Counter: PushCounterHandler {
        let handler: any CounterHandler
        init(handler: any CounterHandler) { self.handler = handler }
        func increment(by amount: Int64) { handler.increment(by: amount) }
        func reset() { handler.reset() }
    }
    final class Timer: PushTimerHandler {
        let handler: any TimerHandler
        init(handler: any TimerHandler) { self.handler = handler }
        func recordNanoseconds(_ duration: Int64) { handler.recordNanoseconds(duration) }
    }
    final class Meter: PushMeterHandler {
        let handler: any MeterHandler
        init(handler: any MeterHandler) { self.handler = handler }
        func set(_ value: Double) { handler.set(value) }
        func increment(by amount: Double) { handler.increment(by: amount) }
        func decrement(by amount: Double) { handler.decrement(by: amount) }
    }
}

/// One `NativePush` for the application: started before the server, shared by every route
/// and event, shut down with the application (a service of its ServiceGroup).
struct NativePushService: Service {
    let push: NativePush

    static func start(logger: Logger, metrics: any MetricsFactory) async throws -> NativePushService {
        let push = try await NativePush.start(
            runtime: NativePush.Configuration(timeouts: .init(request: .seconds(5)), retry: PushRetryPolicy(maximumAttempts: 2)),
            logger: SwiftLogPushLogger(logger: logger), metrics: SwiftMetricsPushFactory(factory: metrics))
        return NativePushService(push: push)
    }

    func run() async throws {
        try? await gracefulShutdown()  // returns when the application stops
        await push.shutdown()  // closes connections; sends still in flight fail as `shutdown`
    }
}

/// The two routes the official apps call; the namespace is the one the hub authenticated.
func addDeviceRoutes(to router: Router, push: NativePush) {
    router.post("/api/devices/register") { request in
        let answer = await push.register(namespace: request.namespace, body: request.body)
        return Response(status: answer.status, body: answer.body)
    }
    router.delete("/api/devices/register") { request in
        let answer = await push.unregister(namespace: request.namespace, body: request.body)
        return Response(status: answer.status, body: answer.body)
    }
}
// README-EMBEDDING-END

@Suite struct EmbeddingExampleTests {
    /// The README's code, run: started once, routes registering a device, a dispatch counted in
    /// the stand-in swift-metrics backend and logged through the stand-in swift-log, then shut
    /// down with the application.
    @Test func theReadmeEmbeddingRunsAgainstLoopbackProviders() async throws {
        let providers = try LoopbackProviders()
        let directory = providers.directory + "/hub"
        defer { providers.stop() }
        let environment = providers.environment(iosMode: "relay", androidMode: "relay", dataDirectory: directory)
        let logger = Logger(label: "hub.push")
        let metrics = RecordingMetricsFactory()

        // NativePush.start reads the process environment by default; the test passes its own.
        let push = try await NativePush.start(
            environment: environment, dataDirectory: directory, persistSettings: false,
            logger: SwiftLogPushLogger(logger: logger), metrics: SwiftMetricsPushFactory(factory: metrics))
        let service = NativePushService(push: push)
        let router = Router()
        addDeviceRoutes(to: router, push: service.push)
        let application = Task { try await service.run() }

        let key = try PushKey.generate()
        let register = Array(#"{"platform":"ios","deviceId":"iphone","token":"\#(String(repeating: "ab", count: 32))","pushKey":"\#(key.base64)"}"#.utf8)
        let registered = try await router.respond(method: "POST", Request(path: "/api/devices/register", body: register, namespace: "default"))
        #expect(registered == Response(status: 200, body: #"{"ok":true}"#))
        let bad = try await router.respond(method: "POST", Request(path: "/api/devices/register", body: Array("{}".utf8), namespace: "default"))
        #expect(bad.status == 400)

        let payload = PushNotificationPayload(type: .ready, sessionId: "s1", title: "HAPI", body: "Ready for input")
        let report = try await service.push.dispatch(payload, namespace: "default")
        #expect(report.suppressWebPush)
        #expect(metrics.value("hapi_push_deliveries_total", [("transport", "relay"), ("outcome", "sent"), ("reason", "none")]) == 1)
        #expect(metrics.value("hapi_push_delivery_duration_seconds", [("transport", "relay")]) == 1)
        #expect(metrics.value("hapi_push_requests_in_flight", [("transport", "relay")]) == 0)
        let entry = try #require(logger.logged.first)
        #expect(entry.metadata["outcome"] == .string("sent") && entry.metadata["transport"] == .string("relay"))
        #expect(!logger.logged.contains { $0.metadata.values.contains(.string(String(repeating: "ab", count: 32))) })

        let removed = try await router.respond(
            method: "DELETE", Request(path: "/api/devices/register", body: Array(#"{"token":"\#(String(repeating: "ab", count: 32))"}"#.utf8), namespace: "default"))
        #expect(removed.status == 200)

        // The application stops: the service returns after shutting NativePush down.
        application.cancel()
        try await application.value
        let after = try await service.push.dispatch(payload, namespace: "default")
        #expect(after.deliveries.isEmpty)  // the DELETE route removed the only device
    }

    @Test func readmeShowsTheCompiledEmbeddingCode() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: here, encoding: .utf8)
        let begin = try #require(source.range(of: "// README-EMBEDDING-BEGIN\n"))
        let end = try #require(source.range(of: "// README-EMBEDDING-END"))
        #expect(readme.contains("```swift\nimport Logging\nimport Metrics\nimport PushNative\nimport ServiceLifecycle\n\n" + String(source[begin.upperBound..<end.lowerBound]) + "```"))
    }
}
