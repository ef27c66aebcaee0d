import Foundation
import Testing

@testable import DeviceRegistry
@testable import PushEnvelope

@Suite struct SQLiteDeviceStoreTests {
    @Test func persistsAcrossReopen() async throws {
        let dir = TemporaryDirectory()
        do {
            let store = try SQLitePushDeviceStore(directory: dir.path)
            _ = try await store.upsert(try request(platform: "ios", token: iosToken, key: keyA), now: 7)
        }
        let reopened = try SQLitePushDeviceStore(directory: dir.path)
        let devices = try await reopened.devices(namespace: "ns", platforms: nil)
        #expect(devices.count == 1)
        #expect(devices.first?.pushKey?.base64 == keyA)
        #expect(devices.first?.createdAt == 7)
    }

    @Test func createsOwnerOnlyFileAndDirectories() async throws {
        let dir = TemporaryDirectory()
        let nested = dir.path + "/a/b"
        let store = try SQLitePushDeviceStore(directory: nested)
        _ = try await store.upsert(try request(), now: 1)
        let fm = FileManager.default
        let filePermissions = try fm.attributesOfItem(atPath: nested + "/" + SQLitePushDeviceStore.defaultFileName)[.posixPermissions] as? Int
        #expect(filePermissions == 0o600)
        for directory in [dir.path + "/a", nested] {
            #expect(try fm.attributesOfItem(atPath: directory)[.posixPermissions] as? Int == 0o700, "\(directory)")
        }
        // The WAL side files inherit the database file's mode.
        for suffix in ["-wal", "-shm"] where fm.fileExists(atPath: store.configuration.path + suffix) {
            #expect(try fm.attributesOfItem(atPath: store.configuration.path + suffix)[.posixPermissions] as? Int == 0o600)
        }
    }

    @Test func usesWALAndVersionsTheSchema() throws {
        let dir = TemporaryDirectory()
        let store = try SQLitePushDeviceStore(directory: dir.path)
        _ = store
        let check = try SQLiteConnection(path: dir.file(SQLitePushDeviceStore.defaultFileName), busyTimeoutMilliseconds: 1000)
        #expect(try check.query("PRAGMA journal_mode").first?.first?.text == "wal")
        #expect(try check.query("PRAGMA user_version").first?.first?.integer == SQLitePushDeviceStore.schemaVersion)
        let columns = try check.query("SELECT name FROM pragma_table_info('fcm_devices')").compactMap { $0.first?.text }
        #expect(columns == ["id", "namespace", "token", "platform", "device_id", "push_key", "created_at", "updated_at"])
    }

    @Test func concurrentRegistrationsCommitTogetherAndOneFailureTakesNoOtherWithIt() async throws {
        let dir = TemporaryDirectory()
        let store = try SQLitePushDeviceStore(directory: dir.path)
        do {
            // A row the database itself refuses, to fail one registration inside a shared transaction.
            let side = try SQLiteConnection(path: dir.file(SQLitePushDeviceStore.defaultFileName), busyTimeoutMilliseconds: 5000)
            try side.execute(
                "CREATE TRIGGER poison BEFORE INSERT ON fcm_devices WHEN NEW.device_id = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned'); END")
        }
        let outcomes = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
            for index in 0..<300 {
                let deviceId = index == 150 ? "poison" : "d\(index)"
                let registration = try request(deviceId: deviceId, token: "tok-\(index)")
                group.addTask {
                    do {
                        _ = try await store.upsert(registration, now: Int64(index))
                        return (deviceId, true)
                    } catch {
                        return (deviceId, false)
                    }
                }
            }
            return try await group.reduce(into: [String: Bool]()) { $0[$1.0] = $1.1 }
        }
        #expect(outcomes["poison"] == false)
        #expect(outcomes.values.filter { $0 }.count == 299)
        let listed = try await store.devices(namespace: "ns", platforms: nil)
        #expect(listed.count == 299)
        #expect(!listed.contains { $0.deviceId == "poison" })
    }

    @Test func listingIsOneScanOfACoveringIndexAndVersionOneDatabasesGainIt() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file(SQLitePushDeviceStore.defaultFileName)
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        do {
            // A database as version 1 of this code left it: the table and the token index only.
            let old = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 1000)
            try old.execute(
                """
                CREATE TABLE fcm_devices (id INTEGER PRIMARY KEY, namespace TEXT NOT NULL, token TEXT NOT NULL,
                    platform TEXT NOT NULL, device_id TEXT NOT NULL, push_key TEXT, created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL, UNIQUE (namespace, device_id, platform));
                CREATE INDEX fcm_devices_token ON fcm_devices (token);
                INSERT INTO fcm_devices (namespace, token, platform, device_id, push_key, created_at, updated_at)
                    VALUES ('ns', 'tok-a', 'phone', 'a', NULL, 1, 1), ('ns', 'tok-b', 'phone', 'b', NULL, 2, 2);
                PRAGMA user_version = 1;
                """)
        }
        let store = try SQLitePushDeviceStore(directory: dir.path)
        #expect(try await store.devices(namespace: "ns", platforms: nil).map(\.deviceId) == ["b", "a"])
        let check = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 1000)
        #expect(try check.query("PRAGMA user_version").first?.first?.integer == 2)
        let plan = try check.query(
            "EXPLAIN QUERY PLAN SELECT device_id, platform, token, push_key, created_at, updated_at FROM fcm_devices WHERE namespace = 'ns' ORDER BY updated_at DESC, id DESC"
        ).compactMap { $0.last?.text }.joined(separator: " | ")
        #expect(plan.contains("COVERING INDEX fcm_devices_listing"), "\(plan)")
        #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
    }

    @Test func refusesAFileThatIsNotADatabaseAndLeavesItUntouched() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("garbage.sqlite3")
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: path))
        #expect(throws: PushDeviceStoreError.notADatabase) { try SQLitePushDeviceStore(configuration: .init(path: path)) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
        do {
            _ = try SQLitePushDeviceStore(configuration: .init(path: path))
        } catch {
            #expect(error.message.contains(path))
            #expect(error.message.contains("left untouched"))
        }
    }

    @Test func refusesAnIncompatibleTable() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("other.sqlite3")
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        do {
            let db = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 100)
            try db.execute("CREATE TABLE fcm_devices (id INTEGER PRIMARY KEY, token TEXT)")
        }
        #expect(throws: PushDeviceStoreError.incompatibleSchema) { try SQLitePushDeviceStore(configuration: .init(path: path)) }
        do {
            _ = try SQLitePushDeviceStore(configuration: .init(path: path))
        } catch {
            #expect(error.message.contains("namespace"))
        }
        // Without the unique key the upsert cannot work either.
        do {
            let db = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 100)
            try db.execute(
                "CREATE TABLE t2 (id TEXT, namespace TEXT, token TEXT, platform TEXT, device_id TEXT, push_key TEXT, created_at INTEGER, updated_at INTEGER)")
        }
        #expect(throws: PushDeviceStoreError.incompatibleSchema) { try SQLitePushDeviceStore(configuration: .init(path: path, tableName: "t2")) }
    }

    @Test func adoptsAnExistingHubTableWithIntegerIds() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("hub.db")
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        do {
            let db = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 100)
            try db.execute(
                """
                PRAGMA user_version = 9;
                CREATE TABLE push_devices (id INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL, token TEXT NOT NULL,
                  platform TEXT NOT NULL, device_id TEXT NOT NULL, push_key TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
                  UNIQUE(namespace, device_id, platform));
                INSERT INTO push_devices (namespace, token, platform, device_id, push_key, created_at, updated_at)
                  VALUES ('ns', 'existing', 'phone', 'old-device', NULL, 5, 5);
                INSERT INTO push_devices (namespace, token, platform, device_id, push_key, created_at, updated_at)
                  VALUES ('ns', 'legacy', 'android', 'weird', NULL, 6, 6);
                """)
        }
        let store = try SQLitePushDeviceStore(configuration: .init(path: path, tableName: "push_devices"))
        #expect(try await store.devices(namespace: "ns", platforms: nil).map(\.deviceId) == ["old-device"])
        _ = try await store.upsert(try request(deviceId: "new", token: "fresh"), now: 10)
        #expect(try await store.devices(namespace: "ns", platforms: nil).map(\.deviceId) == ["new", "old-device"])
        let check = try SQLiteConnection(path: path, busyTimeoutMilliseconds: 100)
        // The adopted database's own schema version is not ours to change.
        #expect(try check.query("PRAGMA user_version").first?.first?.integer == 9)
    }

    @Test func refusesABadTableName() {
        let dir = TemporaryDirectory()
        for name in ["", "fcm devices", "x\"; DROP TABLE y; --", "1abc"] {
            #expect(throws: PushDeviceStoreError.invalidTableName) {
                try SQLitePushDeviceStore(configuration: .init(path: dir.file("db"), tableName: name))
            }
        }
    }

    @Test func refusesAReadOnlyLocation() async throws {
        // /sys cannot be written even by root, so this holds in CI (root) and for users alike.
        #expect(throws: PushDeviceStoreError.readOnly) { try SQLitePushDeviceStore(directory: "/sys/hapi-push-test") }
        do {
            _ = try SQLitePushDeviceStore(directory: "/sys/hapi-push-test")
        } catch {
            #expect(error.message.contains("/sys/hapi-push-test"))
        }
        if getuid() != 0 {
            let dir = TemporaryDirectory()
            let store = try SQLitePushDeviceStore(directory: dir.path)
            _ = store
            chmod(dir.file(SQLitePushDeviceStore.defaultFileName), 0o400)
            await #expect(throws: PushDeviceStoreError.self) {
                let readOnly = try SQLitePushDeviceStore(directory: dir.path)
                _ = try await readOnly.upsert(try request(), now: 1)
            }
        }
    }

    @Test func refusesADirectoryAsTheFile() {
        let dir = TemporaryDirectory()
        #expect(throws: PushDeviceStoreError.cannotOpen) { try SQLitePushDeviceStore(configuration: .init(path: dir.path)) }
    }

    @Test func twoProcessesWritingAtOnceLoseAndDuplicateNothing() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("shared.sqlite3")
        _ = try SQLitePushDeviceStore(configuration: .init(path: path))
        let count = 2000
        let writer = builtExecutable("hapi-push-testsupport")
        let processes = try ["a", "b"].map { prefix -> Process in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: writer)
            process.arguments = ["registry-writer", "--path", path, "--namespace", "ns", "--count", "\(count)", "--prefix", prefix]
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            return process
        }
        // This process writes too, while the two children do.
        let store = try SQLitePushDeviceStore(configuration: .init(path: path))
        for index in 0..<500 {
            _ = try await store.upsert(try request(deviceId: "c-\(index)", token: "c-token-\(index)"), now: Int64(index))
        }
        for process in processes {
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        let devices = try await store.devices(namespace: "ns", platforms: nil)
        #expect(devices.count == 2 * count + 500)
        #expect(Set(devices.map(\.deviceId)).count == devices.count)
        #expect(Set(devices.map(\.token)).count == devices.count)
    }
}
