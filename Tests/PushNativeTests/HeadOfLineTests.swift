import Foundation
import PushLoopbackServer
import PushSync
import PushTestSupport
import Testing

import DeviceRegistry
import PushEnvelope
import PushTransports
@testable import PushNative

/// A request that is never answered delays only itself: the in-flight limit is a window that
/// refills as each request ends, not chunks that end with their slowest request.
@Suite struct HeadOfLineTests {
    static let devices = 10_000
    /// Four devices among the first 400 whose requests the stand-in never answers.
    static let stalled: Set<Int> = [7, 133, 256, 399]

    static func token(_ index: Int) -> String { Digest.hex(Digest.sha256(Array("hol-device-\(index)".utf8))) }

    @Test func fourSilentDevicesDelayOnlyThemselves() async throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let stalledPaths = Set(Self.stalled.map { "/3/device/" + Self.token($0) })
        let arrivals = Locked([ContinuousClock.Instant]())
        providers.apns.respond { request in
            if stalledPaths.contains(request.path) { arrivals.withLock { $0.append(.now) } }
            return stalledPaths.contains(request.path) ? .action(.neverRespond) : LoopbackServer.Response.json("").adding(header: "apns-id", "00000000-0000-0000-0000-000000000001")
        }
        let key = try PushKey.generate()
        let all = (0..<Self.devices).map { index in
            PushDeviceRegistration(
                namespace: "hol", deviceId: "d\(index)", platform: .ios, token: Self.token(index), pushKey: key, createdAt: 0, updatedAt: 0)
        }
        let store = FixedDeviceStore(all)
        let baselineStore = FixedDeviceStore(all.enumerated().filter { !Self.stalled.contains($0.offset) }.map(\.element))
        let directory = providers.directory + "/hol"
        let configuration = try PushConfiguration.load(
            environment: providers.environment(iosMode: "apns", androidMode: "off", dataDirectory: directory), dataDirectory: directory, persist: false)
        let concurrency = 256

        // The same send without the four: how long 9,996 deliveries take on this machine now.
        let baselinePush = try NativePush(configuration: configuration, store: baselineStore, runtime: .init(concurrency: .init(apns: concurrency)))
        _ = try await baselinePush.dispatch(readyPayload, namespace: "hol")  // warm: connection, token, code paths
        let clock = ContinuousClock()
        let baselineStart = clock.now
        let baselineReport = try await baselinePush.dispatch(readyPayload, namespace: "hol")
        let baseline = clock.now - baselineStart
        await baselinePush.shutdown()
        #expect(baselineReport.count(.sent) == Self.devices - Self.stalled.count)

        // A request timeout well beyond that, so "delivered before the timeout" means something.
        let timeout = max(Duration.seconds(3), baseline * 2 + .seconds(1))
        let logger = ArrivalLogger(clock: clock)
        let gauge = InFlightGauge()
        let push = try NativePush(
            configuration: configuration, store: store, runtime: .init(timeouts: .init(request: timeout), concurrency: .init(apns: concurrency)),
            logger: logger, metrics: gauge)
        let start = clock.now
        logger.start(at: start)
        let report = try await push.dispatch(readyPayload, namespace: "hol")
        let elapsed = clock.now - start
        await push.shutdown()

        let lastSent = try #require(logger.lastSent)
        let stalledEnds = logger.failedAt
        print(
            "head-of-line: baseline \(baseline) for \(Self.devices - Self.stalled.count); with four silent: last sent after \(lastSent), the four failed after \(stalledEnds.map { "\($0)" }), whole send \(elapsed), timeout \(timeout), peak in flight \(gauge.peak), silent requests arrived after \(arrivals.withLock { $0 }.map { $0 - start })"
        )
        #expect(report.count(.sent) == Self.devices - Self.stalled.count)
        #expect(report.count(.failed) == Self.stalled.count)
        for index in Self.stalled {
            let delivery = report.deliveries.first { $0.deviceId == "d\(index)" }
            #expect(delivery?.outcome == .failed)
            #expect(delivery?.reasonText == "timeout")
        }
        // The 9,996 are delivered in about the time they take without the four, long before the
        // four's deadline; the four fail when their own deadline passes; the send ends then.
        #expect(lastSent < baseline * 2 + .milliseconds(500), "last sent after \(lastSent), baseline \(baseline)")
        #expect(lastSent < timeout)
        #expect(stalledEnds.count == Self.stalled.count)
        for end in stalledEnds {
            #expect(end >= timeout - .milliseconds(100), "a silent request failed early, after \(end)")
            #expect(end < timeout + .seconds(3), "a silent request failed late, after \(end)")
        }
        #expect(elapsed >= timeout - .milliseconds(100))
        #expect(elapsed < timeout + .seconds(3), "the send took \(elapsed) with a timeout of \(timeout)")
        #expect(gauge.peak <= Double(concurrency), "in flight peaked at \(gauge.peak)")
        #expect(gauge.peak >= Double(concurrency) / 2, "the window never filled: \(gauge.peak)")
        #expect(gauge.current == 0)
    }
}

/// When each push was logged, relative to the start of the send.
final class ArrivalLogger: PushLogger, Sendable {
    private struct State {
        var start: ContinuousClock.Instant?
        var lastSent: Duration?
        var failedAt: [Duration] = []
    }
    private let state = Locked(State())
    let clock: ContinuousClock

    init(clock: ContinuousClock) { self.clock = clock }

    func start(at instant: ContinuousClock.Instant) { state.withLock { $0.start = instant } }

    func log(_ record: PushLogRecord) {
        let now = clock.now
        state.withLock { state in
            guard let start = state.start else { return }
            switch record.outcome {
            case .sent: state.lastSent = max(state.lastSent ?? .zero, now - start)
            case .failed: state.failedAt.append(now - start)
            case .invalid, .skipped: break
            }
        }
    }

    var lastSent: Duration? { state.withLock { $0.lastSent } }
    var failedAt: [Duration] { state.withLock { $0.failedAt } }
}

/// A metrics sink that keeps `hapi_push_requests_in_flight`'s current value and its peak.
final class InFlightGauge: PushMetricsFactory, Sendable {
    final class Meter: PushMeterHandler, Sendable {
        let state = Locked((current: 0.0, peak: 0.0))
        func set(_ value: Double) { state.withLock { $0 = (value, max($0.peak, value)) } }
        func increment(by amount: Double) { state.withLock { $0.current += amount; $0.peak = max($0.peak, $0.current) } }
        func decrement(by amount: Double) { state.withLock { $0.current -= amount } }
    }
    final class Ignored: PushCounterHandler, PushTimerHandler, Sendable {
        func increment(by amount: Int64) {}
        func reset() {}
        func recordNanoseconds(_ duration: Int64) {}
    }
    let meter = Meter()

    func makeCounter(label: String, dimensions: [(String, String)]) -> any PushCounterHandler { Ignored() }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any PushTimerHandler { Ignored() }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any PushMeterHandler {
        label == "hapi_push_requests_in_flight" ? meter : Meter()
    }

    var peak: Double { meter.state.withLock { $0.peak } }
    var current: Double { meter.state.withLock { $0.current } }
}

/// Registrations as given, for a send to thousands of devices without registering each.
struct FixedDeviceStore: PushDeviceStore {
    let registrations: [PushDeviceRegistration]
    init(_ registrations: [PushDeviceRegistration]) { self.registrations = registrations }

    func upsert(_ request: PushRegistrationRequest, now: Int64) async throws -> PushDeviceRegistration {
        throw PushDeviceStoreError.readOnly
    }
    func unregister(namespace: String, token: String) async throws -> Bool { false }
    func prune(namespace: String, token: String, notAfter: Int64?) async throws -> Bool { false }
    func devices(namespace: String, platforms: Set<PushDevicePlatform>?) async throws -> [PushDeviceRegistration] {
        registrations.filter { $0.namespace == namespace && (platforms?.contains($0.platform) ?? true) }
    }
}
