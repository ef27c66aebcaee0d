import DeviceRegistryPostgres
import Foundation
import PushSync
import PushTestSupport
import Testing

@testable import DeviceRegistry

/// PostgreSQL restarted under a running store (its own server: the restart would break other
/// suites' connections). The store heals by reconnecting; nothing acknowledged is lost.
@Suite struct PostgresRestartTests {
    @Test func aRegistrationBurstSurvivesAServerCrashAndRestart() async throws {
        let server = try await PostgresTestServer.start()
        defer { server.stop() }
        let configuration = try PostgresPushDeviceStore.Configuration(url: server.url, tableName: "burst", connectTimeoutSeconds: 2)
        let store = try await PostgresPushDeviceStore.open(configuration: configuration)

        let acknowledged = Locked<Set<String>>([])
        let failures = Locked<[PushDeviceStoreError]>([])
        let restarted = Locked(false)
        let afterRestart = Locked(0)
        let burst = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<4 {
                    group.addTask {
                        var index = 0
                        // Until each writer has had 50 registrations acknowledged after the restart.
                        while afterRestart.withLock({ $0 }) < 200, index < 100_000 {
                            let id = "w\(task)-\(index)"
                            index += 1
                            do {
                                _ = try await store.upsert(try request(deviceId: id, token: "token-\(id)"), now: Int64(index))
                                acknowledged.withLock { _ = $0.insert(id) }
                                if restarted.withLock({ $0 }) { afterRestart.withLock { $0 += 1 } }
                            } catch let error as PushDeviceStoreError {
                                failures.withLock { $0.append(error) }
                                try await Task.sleep(for: .milliseconds(20))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        while acknowledged.withLock({ $0.count }) < 300 { try await Task.sleep(for: .milliseconds(5)) }
        // A crash: every backend killed at once, no shutdown checkpoint; then the server is back.
        try await server.restartAsync(mode: "immediate")
        restarted.withLock { $0 = true }
        try await burst.value

        // The first read after the restart (on a pooled connection the server dropped) works.
        let devices = try await store.devices(namespace: "ns")
        let present = Set(devices.map(\.deviceId))
        let lost = acknowledged.withLock { $0 }.subtracting(present)
        #expect(lost.isEmpty, "\(lost.count) acknowledged registrations lost, e.g. \(lost.sorted().prefix(5))")
        #expect(Set(devices.map(\.token)).count == devices.count)
        let kinds = Set(failures.withLock { $0 }.map(\.code))
        #expect(kinds.isSubset(of: [.unavailable, .unknownOutcome]), "unexpected failures: \(failures.withLock { $0 }.prefix(3))")
        for failure in failures.withLock({ $0 }) { #expect(!failure.message.contains(server.password)) }
        print("restart during a burst: \(acknowledged.withLock { $0.count }) acknowledged, all present; \(failures.withLock { $0.count }) failed while the server was away (\(kinds))")
    }

    @Test func idleConnectionsAreReplacedAfterARestartWithoutFailingTheNextCall() async throws {
        let server = try await PostgresTestServer.start()
        defer { server.stop() }
        let store = try await PostgresPushDeviceStore.open(
            configuration: try .init(url: server.url, tableName: "idle", maximumConnections: 2, connectTimeoutSeconds: 2))
        _ = try await store.upsert(try request(token: "t1"), now: 1)
        _ = try await store.devices(namespace: "ns")
        for mode in ["fast", "immediate"] {
            try await server.restartAsync(mode: mode)
            // A write on a connection the server closed is not sent on it: it goes out on a new one.
            _ = try await store.upsert(try request(deviceId: "after-\(mode)", token: "t-\(mode)"), now: 2)
            #expect(try await store.devices(namespace: "ns").contains { $0.deviceId == "after-\(mode)" })
            #expect(try await store.prune(namespace: "ns", token: "t-\(mode)"))
        }
    }
}
