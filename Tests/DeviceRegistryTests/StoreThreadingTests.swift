import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushSync
import PushTestSupport
import Testing

@testable import DeviceRegistry

/// The store never blocks a Swift concurrency thread: while another process holds the
/// database's write lock, many tasks waiting to write only suspend, a ticking task keeps its
/// pace, and reads do not queue behind the waiting writes.
///
/// Before the store had threads of its own this failed (checked): every waiting upsert held a
/// cooperative thread inside SQLite's busy handler (or on the store's lock), the pool (one
/// thread per core) was exhausted, the ticker could not tick, the lock was therefore never
/// released, and the writes ended in `busy` after the busy timeout.
@Suite struct StoreThreadingTests {
    /// More waiters than the cooperative pool has threads, whatever the machine.
    static let waiters = max(8, 2 * ProcessInfo.processInfo.activeProcessorCount)
    static let ticksWanted = 20

    @Test func writersWaitingOnALockedDatabaseDoNotStallOtherTasksOrReads() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("locked.sqlite3")
        // Long enough that the waits outlast the ticks on any machine; the test releases the lock itself.
        let store = try await SQLitePushDeviceStore.open(configuration: .init(path: path, busyTimeoutMilliseconds: 20_000))
        _ = try await store.upsert(try request(deviceId: "before", token: "before-token"), now: 1)

        let holder = try SQLiteLockHolder(path: path)
        defer { holder.release() }

        let ticker = PaceTicker()
        defer { ticker.stop() }

        let writesDone = Locked(0)
        let writers = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<Self.waiters {
                    group.addTask {
                        _ = try await store.upsert(try request(deviceId: "waiter-\(index)", token: "waiter-token-\(index)"), now: 10)
                        writesDone.withLock { $0 += 1 }
                    }
                }
                try await group.waitForAll()
            }
        }

        // The ticker keeps its pace while every writer waits for the lock.
        while ticker.ticks < Self.ticksWanted, writesDone.withLock({ $0 }) == 0 {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(writesDone.withLock { $0 } == 0, "a write finished while another process held the lock")
        #expect(ticker.ticks >= Self.ticksWanted)

        // A read does not wait behind the queued writes (its own connection, WAL).
        let seen = try await store.devices(namespace: "ns")
        #expect(seen.map(\.deviceId) == ["before"])
        #expect(writesDone.withLock { $0 } == 0, "the writes should still be waiting for the other process")

        holder.release()
        try await writers.value
        #expect(writesDone.withLock { $0 } == Self.waiters)
        #expect(try await store.devices(namespace: "ns").count == Self.waiters + 1)
    }
}
