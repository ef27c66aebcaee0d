import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushHTTP
import PushLoopbackServer
import PushSync
import PushTestSupport
import Testing

import DeviceRegistry
import PushTransports
@testable import PushNative

/// Issue 12, item 3, at the level of a dispatch: while another process holds the SQLite write
/// lock, eight (or more: twice the cores) dispatches that must prune a dead token wait for it
/// without holding a Swift concurrency thread, so a ticking task keeps its pace; a dispatch's
/// read of the devices (and `devices list`'s) takes no write lock and does not wait at all.
@Suite struct DispatchOnALockedDatabaseTests {
    static let dispatches = max(8, 2 * ProcessInfo.processInfo.activeProcessorCount)

    @Test func dispatchesWaitingToPruneDoNotStallOtherTasks() async throws {
        let relay = try RecordingServer { _ in .text(status: 410, #"{"ok":false,"code":"unregistered"}"#) }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-locked-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer {
            relay.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let path = directory + "/native-push.sqlite3"
        let store = try await SQLitePushDeviceStore.open(configuration: .init(path: path, busyTimeoutMilliseconds: 20_000))
        let key = try PushKey.generate()
        for index in 0..<Self.dispatches {
            let token = String(format: "%064x", index + 1)
            _ = try await store.upsert(
                try PushRegistrationRequest(namespace: "ns\(index)", platform: "ios", deviceId: "iphone", token: token, pushKey: key.base64), now: 1)
        }
        let client = try HTTPClient(configuration: .init(requestTimeout: .seconds(10), additionalTrustedCAFile: relay.caFile))
        let dispatcher = PushDispatcher(store: store, ios: .encrypted(RelayTransport(baseURL: relay.baseURL, client: client)), android: .off(reason: "x"))

        let holder = try SQLiteLockHolder(path: path)
        defer { holder.release() }

        let ticker = PaceTicker()
        defer { ticker.stop() }

        let done = Locked(0)
        let running = Task {
            try await withThrowingTaskGroup(of: PushDispatchReport.self) { group in
                for index in 0..<Self.dispatches {
                    group.addTask {
                        let report = try await dispatcher.dispatch(readyPayload, namespace: "ns\(index)")
                        done.withLock { $0 += 1 }
                        return report
                    }
                }
                var reports: [PushDispatchReport] = []
                for try await report in group { reports.append(report) }
                return reports
            }
        }

        // Every dispatch read its devices (no write lock needed) and got its 410: each now waits to prune.
        let deadline = ContinuousClock.now + .seconds(15)
        while relay.requests.count < Self.dispatches, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(relay.requests.count == Self.dispatches, "every dispatch should have read its devices and sent")

        // The ticker keeps its pace while every dispatch waits for the lock.
        let start = ticker.ticks
        while ticker.ticks < start + 20, done.withLock({ $0 }) == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(ticker.ticks >= start + 20)
        #expect(done.withLock { $0 } == 0, "a dispatch finished its prune while another process held the lock")

        // A read while they wait: no write lock, no queue behind the waiting prunes.
        #expect(try await store.devices(namespace: "ns0").count == 1)
        #expect(done.withLock { $0 } == 0)

        holder.release()
        let reports = try await running.value
        await client.shutdown()
        #expect(reports.count == Self.dispatches)
        #expect(reports.allSatisfy { $0.deliveries.count == 1 && $0.deliveries[0].pruned }, "\(reports)")
        #expect(try await store.devices(namespace: "ns0").isEmpty)
    }
}
