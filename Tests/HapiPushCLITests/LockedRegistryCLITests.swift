import Foundation
import PushTestSupport
import Testing

/// Issue 20, item 9: reading the registry takes no write lock. While another process holds a
/// write transaction (`BEGIN IMMEDIATE` plus a write) on the SQLite file, `devices list` answers
/// at once from the last committed state, where opening the store used to take the write lock to
/// check the schema and failed after the 5 s busy timeout ("stayed locked by another writer").
@Suite struct LockedRegistryCLITests {
    @Test func devicesListAnswersWhileAnotherProcessHoldsTheWriteLock() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-cli-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let registered = try CLI.run([
            "--data-dir", dir, "devices", "register", "--namespace", "ns", "--platform", "phone", "--device-id", "pixel", "--token", "fcm:tok",
        ])
        #expect(registered.status == 0, "\(registered.stderr)")
        // What one `devices list` costs on this machine with nobody holding the lock.
        let unlockedStart = ContinuousClock.now
        #expect(try CLI.run(["--data-dir", dir, "devices", "list", "--namespace", "ns"]).status == 0)
        let unlocked = ContinuousClock.now - unlockedStart

        // Held for 8 s (longer than the busy timeout) unless the test lets go first.
        let holder = try SQLiteLockHolder(path: dir + "/native-push.sqlite3")
        defer { holder.release() }
        let lockedAt = ContinuousClock.now
        let list = try CLI.run(["--data-dir", dir, "devices", "list", "--namespace", "ns", "--json"], timeout: .seconds(8))
        let elapsed = ContinuousClock.now - lockedAt
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("\"deviceId\":\"pixel\""), "\(list.stdout)")
        #expect(elapsed < unlocked + .seconds(1), "devices list took \(elapsed) with the lock held (\(unlocked) without)")
        #expect(elapsed < .seconds(8), "the lock holder let go before devices list answered")
    }
}
