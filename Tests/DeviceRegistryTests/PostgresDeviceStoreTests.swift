import DeviceRegistryPostgres
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushTestSupport
import Testing

@testable import DeviceRegistry

/// What only the PostgreSQL store has to show: the schema it creates and adopts, that the
/// database itself refuses a token in two rows, that two hub processes registering at once
/// lose and duplicate nothing, errors that name the server without its password, and the
/// statement timeout. (The behavioural suite runs against it too; restarts are in
/// `PostgresRestartTests`.) One server for the whole process.
@Suite struct PostgresDeviceStoreTests {
    @Test func createsTheHubLayoutWithMillisecondBigintsAndAUniqueTokenIndex() async throws {
        let configuration = try freshPostgresTable()
        let store = try await PostgresPushDeviceStore.open(configuration: configuration)
        _ = try await store.upsert(try request(token: "t"), now: 1_787_400_000_000)
        let server = try PostgresTestServer.shared()
        let table = configuration.tableName
        let columns = try await server.psqlAsync(
            "SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = '\(table)'::regclass AND attnum > 0")
        #expect(columns.trimmingCharacters(in: .whitespacesAndNewlines) == "id:bigint,namespace:text,token:text,platform:text,device_id:text,push_key:text,created_at:bigint,updated_at:bigint")
        #expect(try await server.psqlAsync("SELECT created_at FROM \(table)").contains("1787400000000"))
        #expect(try await server.psqlAsync("SELECT obj_description('\(table)'::regclass, 'pg_class')").contains("schema 1"))
        // The proof of "one token, one row" across processes: the database refuses a second row
        // holding a token, whoever writes it (a raw INSERT here, a racing hub elsewhere).
        await #expect(throws: (any Error).self) {
            try await server.psqlAsync(
                "INSERT INTO \(table) (namespace, token, platform, device_id, created_at, updated_at) VALUES ('other', 't', 'phone', 'x', 1, 1)")
        }
        // Opening again (another hub process) finds it and changes nothing.
        let again = try await PostgresPushDeviceStore.open(configuration: configuration)
        #expect(try await again.devices(namespace: "ns").map(\.token) == ["t"])
    }

    @Test func adoptsAHubTableDroppingStaleDuplicateTokensAndAddingTheTokenKey() async throws {
        let server = try PostgresTestServer.shared()
        let configuration = try freshPostgresTable()
        let table = configuration.tableName
        try await server.psqlAsync(
            """
            CREATE TABLE \(table) (id BIGSERIAL PRIMARY KEY, namespace TEXT NOT NULL, token TEXT NOT NULL, platform TEXT NOT NULL,
              device_id TEXT NOT NULL, push_key TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
              UNIQUE (namespace, device_id, platform));
            INSERT INTO \(table) (namespace, token, platform, device_id, created_at, updated_at) VALUES
              ('ns', 'dup', 'phone', 'old', 1, 1), ('ns', 'dup', 'phone', 'new', 2, 2), ('ns', 'solo', 'wear', 'w', 3, 3),
              ('ns', 'legacy', 'android', 'weird', 4, 4);
            """)
        let store = try await PostgresPushDeviceStore.open(configuration: configuration)
        // The newest holder of a duplicated token wins, as the next registration would decide;
        // a platform we cannot reach is skipped, not fatal.
        #expect(try await store.devices(namespace: "ns").map(\.deviceId) == ["w", "new"])
        _ = try await store.upsert(try request(deviceId: "fresh", token: "dup"), now: 10)
        #expect(try await store.devices(namespace: "ns").map(\.deviceId) == ["fresh", "w"])
        #expect(try await server.psqlAsync("SELECT obj_description('\(table)'::regclass, 'pg_class')").trimmingCharacters(in: .whitespacesAndNewlines).isEmpty)
    }

    @Test func adoptsTextIdsBySupplyingThem() async throws {
        let server = try PostgresTestServer.shared()
        let configuration = try freshPostgresTable()
        try await server.psqlAsync(
            """
            CREATE TABLE \(configuration.tableName) (id TEXT PRIMARY KEY, namespace TEXT NOT NULL, token TEXT NOT NULL, platform TEXT NOT NULL,
              device_id TEXT NOT NULL, push_key TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
              UNIQUE (namespace, device_id, platform))
            """)
        let store = try await PostgresPushDeviceStore.open(configuration: configuration)
        _ = try await store.upsert(try request(token: "a"), now: 1)
        _ = try await store.upsert(try request(deviceId: "d2", token: "b"), now: 2)
        #expect(try await store.devices(namespace: "ns").count == 2)
        #expect(try await server.psqlAsync("SELECT count(DISTINCT id) FROM \(configuration.tableName) WHERE id ~ '^[0-9a-f-]{36}$'").contains("2"))
    }

    @Test func refusesTablesItCannotUse() async throws {
        let server = try PostgresTestServer.shared()
        let missing = try freshPostgresTable()
        try await server.psqlAsync("CREATE TABLE \(missing.tableName) (id BIGSERIAL PRIMARY KEY, token TEXT)")
        await #expect(throws: PushDeviceStoreError.incompatibleSchema) { try await PostgresPushDeviceStore.open(configuration: missing) }
        do {
            _ = try await PostgresPushDeviceStore.open(configuration: missing)
        } catch {
            #expect(error.message.contains("namespace"))
        }
        let seconds = try freshPostgresTable()
        try await server.psqlAsync(
            """
            CREATE TABLE \(seconds.tableName) (id BIGSERIAL PRIMARY KEY, namespace TEXT, token TEXT, platform TEXT, device_id TEXT,
              push_key TEXT, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ, UNIQUE (namespace, device_id, platform))
            """)
        await #expect(throws: PushDeviceStoreError.incompatibleSchema) { try await PostgresPushDeviceStore.open(configuration: seconds) }
        let noKey = try freshPostgresTable()
        try await server.psqlAsync(
            """
            CREATE TABLE \(noKey.tableName) (id BIGSERIAL PRIMARY KEY, namespace TEXT, token TEXT, platform TEXT, device_id TEXT,
              push_key TEXT, created_at BIGINT, updated_at BIGINT)
            """)
        await #expect(throws: PushDeviceStoreError.incompatibleSchema) { try await PostgresPushDeviceStore.open(configuration: noKey) }
        for name in ["", "fcm devices", "x\"; DROP TABLE y; --", "1abc"] {
            let bad = try PostgresPushDeviceStore.Configuration(url: server.url, tableName: name)
            await #expect(throws: PushDeviceStoreError.invalidTableName) { try await PostgresPushDeviceStore.open(configuration: bad) }
        }
    }

    @Test func checksURLsAndNeverShowsThePassword() async throws {
        for url in ["mysql://u:p@h/db", "host=localhost password=secret", "", "https://x"] {
            #expect(throws: PushDeviceStoreError.invalidDatabaseURL) { try PostgresPushDeviceStore.Configuration(url: url) }
        }
        #expect(throws: PushDeviceStoreError.invalidDatabaseURL) { try PostgresPushDeviceStore.Configuration(url: "postgresql://h/db?bogus_option=1") }
        let configuration = try PostgresPushDeviceStore.Configuration(url: "postgresql://hub:s3cret-pass@db.example:5433/hapi?sslmode=require&password=other-secret")
        #expect(configuration.redactedURL == "postgresql://hub:***@db.example:5433/hapi?sslmode=require&password=***")
        for shown in ["\(configuration)", String(reflecting: configuration), "\(Mirror(reflecting: configuration).children.map { "\($0.value)" })"] {
            #expect(!shown.contains("s3cret-pass") && !shown.contains("other-secret"), "\(shown)")
        }

        // A wrong password and an unreachable server: typed errors naming the server, never the password.
        let server = try PostgresTestServer.shared()
        let wrong = try PostgresPushDeviceStore.Configuration(url: "postgresql://\(server.user):wrong-password-123@127.0.0.1:\(server.port)/postgres")
        do {
            _ = try await PostgresPushDeviceStore.open(configuration: wrong)
            Issue.record("a wrong password was accepted")
        } catch {
            #expect(error == .unavailable || error == .cannotOpen, "\(error)")
            #expect(error.message.contains("127.0.0.1") && !error.message.contains("wrong-password-123"), "\(error.message)")
        }
        let down = try PostgresPushDeviceStore.Configuration(url: "postgresql://u:secret-xyz@127.0.0.1:\(try TestServerFiles.freePort())/db", connectTimeoutSeconds: 2)
        await #expect(throws: PushDeviceStoreError.unavailable) { try await PostgresPushDeviceStore.open(configuration: down) }
    }

    @Test func aStatementHeldUpByALockFailsAsBusyAfterTheStatementTimeout() async throws {
        let server = try PostgresTestServer.shared()
        var configuration = try freshPostgresTable()
        configuration.statementTimeoutMilliseconds = 300
        let store = try await PostgresPushDeviceStore.open(configuration: configuration)
        _ = try await store.upsert(try request(token: "t"), now: 1)
        // Another session holds the table locked for longer than the timeout.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: try PostgresTestServer.binary("psql"))
        holder.arguments = ["-X", "-q", "-d", server.url, "-c", "BEGIN; LOCK TABLE \(configuration.tableName) IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(20);"]
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        defer {
            kill(holder.processIdentifier, SIGKILL)
            holder.waitUntilExit()
        }
        // Wait until the lock is really held (psql needs a moment to connect).
        for _ in 0..<200 {
            let locks = try await server.psqlAsync(
                "SELECT count(*) FROM pg_locks WHERE relation = '\(configuration.tableName)'::regclass AND mode = 'AccessExclusiveLock' AND granted")
            if locks.trimmingCharacters(in: .whitespacesAndNewlines) == "1" { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        await #expect(throws: PushDeviceStoreError.busy) { try await store.upsert(try request(deviceId: "d2", token: "t2"), now: 2) }
        await #expect(throws: PushDeviceStoreError.busy) { try await store.devices(namespace: "ns") }
    }

    /// Two hub processes register 5,000 devices each into one table at once; 500 tokens are
    /// registered by both under different device ids, at the same moments.
    @Test func twoHubProcessesRegisteringAtOnceLoseNothingAndNeverShareAToken() async throws {
        let server = try PostgresTestServer.shared()
        let configuration = try freshPostgresTable(maximumConnections: 2)
        _ = try await PostgresPushDeviceStore.open(configuration: configuration)
        let count = 5000
        let shared = 500
        let writer = builtExecutable("hapi-push-testsupport")
        let inputs = [Pipe(), Pipe()]
        let children = try ["a", "b"].enumerated().map { offset, prefix in
            try AckingChild(
                executable: writer,
                arguments: [
                    "registry-writer-postgres", "--url", server.url, "--table", configuration.tableName, "--count", "\(count)", "--prefix", prefix,
                    "--shared", "\(shared)", "--tasks", "4",
                ], input: inputs[offset])
        }
        for child in children { #expect(try child.waitForLine("ready").contains("ready")) }
        for input in inputs {
            input.fileHandleForWriting.write(Data("go\n".utf8))
            try input.fileHandleForWriting.close()
        }
        var reports: [String] = []
        for child in children {
            let lines = try child.waitForExit(seconds: 240)
            #expect(child.process.terminationStatus == 0, "\(lines)")
            reports += lines.filter { $0.hasPrefix("ok ") }
        }
        #expect(reports.count == 2, "\(reports)")

        let store = try await PostgresPushDeviceStore.open(configuration: configuration)
        var rows: [PushDeviceRegistration] = []
        for prefix in ["a", "b"] {
            for bucket in 0..<7 {
                let namespace = "\(prefix)-ns-\(bucket)"
                let devices = try await store.devices(namespace: namespace)
                #expect(devices.allSatisfy { $0.namespace == namespace && $0.deviceId.hasPrefix(prefix + "-") })
                #expect(devices.allSatisfy { Int($0.deviceId.dropFirst(2)).map { $0 % 7 == bucket } ?? false }, "wrong namespace in \(namespace)")
                rows += devices
            }
        }
        // No token in two rows, every unshared device present, each shared token held exactly once.
        #expect(Set(rows.map(\.token)).count == rows.count)
        #expect(rows.count == 2 * count - shared, "rows: \(rows.count)")
        let ids = Set(rows.map(\.deviceId))
        for prefix in ["a", "b"] {
            let lost = (shared..<count).filter { !ids.contains("\(prefix)-\($0)") }
            #expect(lost.isEmpty, "\(lost.count) registrations of \(prefix) lost, e.g. \(lost.prefix(5))")
        }
        for index in 0..<shared {
            let holders = rows.filter { $0.token == "shared-token-\(index)" }
            #expect(holders.count == 1 && ["a-\(index)", "b-\(index)"].contains(holders.first?.deviceId ?? ""))
        }
        let total = try await server.psqlAsync("SELECT count(*), count(DISTINCT token) FROM \(configuration.tableName)")
        #expect(total.trimmingCharacters(in: .whitespacesAndNewlines) == "\(2 * count - shared)|\(2 * count - shared)")
        print("two hub processes on PostgreSQL: \(rows.count) rows, \(reports.joined(separator: "; ")) (retries after token collisions)")
    }
}
