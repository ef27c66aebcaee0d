import CHapiSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushEnvelope
import PushSync

/// Registrations in one SQLite file: the embedded default.
///
/// The row layout is the JavaScript hub's `fcm_devices` table (`id, namespace, token,
/// platform, device_id, push_key, created_at, updated_at`, milliseconds, unique on
/// `(namespace, device_id, platform)`), so a Swift hub can adopt an existing hub database by
/// pointing at it. WAL mode, a busy timeout and `BEGIN IMMEDIATE` transactions make it safe
/// for several processes at once; a registration that returned is durable across a crash of
/// the process (`synchronous=NORMAL`: a power cut may lose the last moments, which devices
/// heal by re-registering on their next start).
public final class SQLitePushDeviceStore: PushDeviceStore {
    /// The file name used inside a data directory.
    public static let defaultFileName = "native-push.sqlite3"
    /// The JavaScript hub's table name.
    public static let defaultTableName = "fcm_devices"
    /// The schema version this code writes into `PRAGMA user_version` of databases it creates.
    /// 1: the table; 2: the listing index.
    static let schemaVersion: Int64 = 2

    public struct Configuration: Sendable {
        /// The database file. Created (0600, directories 0700) when missing.
        public var path: String
        /// The table to use; a plain SQL identifier.
        public var tableName: String
        /// How long a write waits for another writer before failing with `busy`.
        public var busyTimeoutMilliseconds: Int32

        public init(path: String, tableName: String = SQLitePushDeviceStore.defaultTableName, busyTimeoutMilliseconds: Int32 = 5000) {
            self.path = path
            self.tableName = tableName
            self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        }

        /// `<directory>/native-push.sqlite3`.
        public init(directory: String, tableName: String = SQLitePushDeviceStore.defaultTableName) {
            let trimmed = directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
            self.init(path: trimmed + "/" + SQLitePushDeviceStore.defaultFileName, tableName: tableName)
        }
    }

    public let configuration: Configuration
    /// One thread owning the write connection: writes queue here, one transaction at a time.
    let writer: BlockingWorkers<SQLiteConnection>
    /// One thread owning a second, query-only connection: in WAL mode reads never wait for a
    /// writer (ours or another process's), so listing and a dispatch's device read do not
    /// queue behind a write stuck on a busy database.
    let reader: BlockingWorkers<SQLiteConnection>
    private let sql: Statements

    /// Opens (creating when missing) the database and migrates its schema forward. Never
    /// deletes, truncates or recreates a file it could not open.
    ///
    /// This blocks the calling thread while SQLite opens the file (up to the busy timeout if
    /// another process holds it): from async code use `open(configuration:)`, which does the
    /// same on a thread of its own. Every later call runs on the store's own threads.
    public init(configuration: Configuration) throws(PushDeviceStoreError) {
        self.configuration = configuration
        guard Self.isPlainIdentifier(configuration.tableName) else {
            throw PushDeviceStoreError.invalidTableName.with(
                "device table name \"\(configuration.tableName)\" must be a plain SQL identifier (letters, digits, underscore)")
        }
        try Self.createFileIfMissing(configuration.path)
        let connection = try SQLiteConnection(path: configuration.path, busyTimeoutMilliseconds: configuration.busyTimeoutMilliseconds)
        // Asking first: a database already in WAL mode is left as it is, so opening one that
        // another process is writing to never waits for that writer.
        var journal = try connection.query("PRAGMA journal_mode").first?.first?.text?.lowercased()
        if journal != "wal" { journal = try connection.query("PRAGMA journal_mode=WAL").first?.first?.text?.lowercased() }
        guard journal == "wal" else {
            throw PushDeviceStoreError.readOnly.with(
                "device database \(configuration.path) could not switch to WAL mode: its directory must be writable by the hub's user")
        }
        try connection.execute("PRAGMA synchronous=NORMAL")
        let idIsInteger = try Self.migrate(connection, table: configuration.tableName, path: configuration.path)
        try connection.execute(Self.webPushSubscriptionsSchema)
        try connection.execute(Self.webPushVAPIDKeysSchema)
        let readConnection = try SQLiteConnection(path: configuration.path, busyTimeoutMilliseconds: configuration.busyTimeoutMilliseconds)
        try readConnection.execute("PRAGMA query_only=1")
        self.sql = Statements(table: configuration.tableName, idIsInteger: idIsInteger)
        self.writer = BlockingWorkers(name: "hapi-sqlite-w", count: 1) { connection }
        self.reader = BlockingWorkers(name: "hapi-sqlite-r", count: 1) { readConnection }
    }

    /// Opens `<directory>/native-push.sqlite3` (blocking; see `init(configuration:)`).
    public convenience init(directory: String) throws(PushDeviceStoreError) {
        try self.init(configuration: Configuration(directory: directory))
    }

    /// Opens the store on a thread of its own, so the calling task suspends instead of
    /// blocking a Swift concurrency thread while SQLite opens, recovers or waits for the file.
    public static func open(configuration: Configuration) async throws(PushDeviceStoreError) -> SQLitePushDeviceStore {
        try await BlockingWorkers<Void>.runOnce(name: "hapi-sqlite-open", unavailable: workerUnavailable) {
            () throws(PushDeviceStoreError) -> SQLitePushDeviceStore in try SQLitePushDeviceStore(configuration: configuration)
        }
    }

    /// Opens `<directory>/native-push.sqlite3` on a thread of its own.
    public static func open(directory: String) async throws(PushDeviceStoreError) -> SQLitePushDeviceStore {
        try await open(configuration: Configuration(directory: directory))
    }

    static let workerUnavailable = PushDeviceStoreError.failure.with("device database: no worker thread could be started")

    /// Registrations waiting for the writer, committed together (group commit): while one
    /// transaction runs, the next ones queue here and go in the next, each in a savepoint of
    /// its own, so one failing registration never takes another with it. Nobody is answered
    /// before the transaction holding their registration has committed.
    private struct PendingUpserts {
        struct Item {
            let request: PushRegistrationRequest
            let now: Int64
            let continuation: UnsafeContinuation<Result<PushDeviceRegistration, PushDeviceStoreError>, Never>
        }
        var items: [Item] = []
        var flushQueued = false
    }

    private let pending = Locked(PendingUpserts())
    /// Registrations committed in one transaction at most (keeps the write lock short for other
    /// processes).
    static let groupCommitLimit = 256

    public func upsert(_ request: PushRegistrationRequest, now: Int64) async throws(PushDeviceStoreError) -> PushDeviceRegistration {
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<PushDeviceRegistration, PushDeviceStoreError>, Never>) in
            let queueFlush = pending.withLock { pending in
                pending.items.append(PendingUpserts.Item(request: request, now: now, continuation: continuation))
                defer { pending.flushQueued = true }
                return !pending.flushQueued
            }
            if queueFlush { scheduleFlush() }
        }
        return try result.get()
    }

    private func scheduleFlush() {
        let sql = self.sql
        let pending = self.pending
        writer.post { db in
            // Whoever finds more waiting after this batch queues the next flush: exactly one is
            // queued while registrations wait.
            let (batch, more) = pending.withLock { pending -> ([PendingUpserts.Item], Bool) in
                let count = min(pending.items.count, Self.groupCommitLimit)
                let batch = Array(pending.items.prefix(count))
                pending.items.removeFirst(count)
                pending.flushQueued = !pending.items.isEmpty
                return (batch, pending.flushQueued)
            }
            guard !batch.isEmpty else { return }
            guard let db else {
                for item in batch { item.continuation.resume(returning: .failure(Self.workerUnavailable)) }
                return
            }
            let results = Self.commit(batch, db: db.pointee, sql: sql)
            if more { self.scheduleFlush() }
            for (item, result) in zip(batch, results) { item.continuation.resume(returning: result) }
        }
    }

    /// One transaction for the batch; each registration in a savepoint when there are several.
    private static func commit(_ batch: [PendingUpserts.Item], db: SQLiteConnection, sql: Statements) -> [Result<PushDeviceRegistration, PushDeviceStoreError>] {
        if batch.count == 1, let item = batch.first {
            return [Result { () throws(PushDeviceStoreError) -> PushDeviceRegistration in try upsert(item.request, now: item.now, db: db, sql: sql) }]
        }
        do throws(PushDeviceStoreError) {
            return try db.transaction { () throws(PushDeviceStoreError) -> [Result<PushDeviceRegistration, PushDeviceStoreError>] in
                batch.map { item in
                    Result { () throws(PushDeviceStoreError) -> PushDeviceRegistration in
                        try db.query("SAVEPOINT registration")
                        do throws(PushDeviceStoreError) {
                            let stored = try write(item.request, now: item.now, db: db, sql: sql)
                            try db.query("RELEASE registration")
                            return stored
                        } catch {
                            _ = try? db.query("ROLLBACK TO registration")
                            _ = try? db.query("RELEASE registration")
                            throw error
                        }
                    }
                }
            }
        } catch {
            // BEGIN or COMMIT failed: nothing of the batch was written.
            return batch.map { _ in .failure(error) }
        }
    }

    private static func upsert(_ request: PushRegistrationRequest, now: Int64, db: SQLiteConnection, sql: Statements) throws(PushDeviceStoreError)
        -> PushDeviceRegistration
    {
        try db.transaction { () throws(PushDeviceStoreError) -> PushDeviceRegistration in try write(request, now: now, db: db, sql: sql) }
    }

    /// The registration's statements, inside the caller's transaction: other holders of the
    /// token removed, then the row inserted or updated.
    private static func write(_ request: PushRegistrationRequest, now: Int64, db: SQLiteConnection, sql: Statements) throws(PushDeviceStoreError)
        -> PushDeviceRegistration
    {
        do {
            let platform = request.platform.rawValue
            try db.withStatement(sql.deleteOtherHoldersOfToken) { (statement) throws(PushDeviceStoreError) in
                try statement.bind(1, request.token)
                try statement.bind(2, request.namespace)
                try statement.bind(3, request.deviceId)
                try statement.bind(4, platform)
                _ = try statement.step()
            }
            let createdAt = try db.withStatement(sql.upsert) { (statement) throws(PushDeviceStoreError) -> Int64 in
                var index: Int32 = 1
                if !sql.idIsInteger {
                    try statement.bind(index, newRowId())
                    index += 1
                }
                try statement.bind(index, request.namespace)
                try statement.bind(index + 1, request.token)
                try statement.bind(index + 2, platform)
                try statement.bind(index + 3, request.deviceId)
                if let key = request.pushKey { try statement.bind(index + 4, key.base64) } else { try statement.bindNull(index + 4) }
                try statement.bind(index + 5, now)
                try statement.bind(index + 6, now)
                return try statement.step() ? statement.int64(0) : now
            }
            return PushDeviceRegistration(
                namespace: request.namespace, deviceId: request.deviceId, platform: request.platform, token: request.token,
                pushKey: request.pushKey, createdAt: createdAt, updatedAt: now)
        }
    }

    @discardableResult
    public func unregister(namespace: String, token: String) async throws(PushDeviceStoreError) -> Bool {
        let sql = self.sql
        return try await writer.run(unavailable: Self.workerUnavailable) { (db) throws(PushDeviceStoreError) -> Bool in
            try db.query(sql.unregister, [.text(namespace), .text(token), .text(token.lowercased())])
            return db.changes > 0
        }
    }

    @discardableResult
    public func prune(namespace: String, token: String, notAfter: Int64?) async throws(PushDeviceStoreError) -> Bool {
        let sql = self.sql
        return try await writer.run(unavailable: Self.workerUnavailable) { (db) throws(PushDeviceStoreError) -> Bool in
            try db.query(sql.prune, [.text(namespace), .text(token), notAfter.map { .integer($0) } ?? .integer(Int64.max)])
            return db.changes > 0
        }
    }

    public func devices(namespace: String, platforms: Set<PushDevicePlatform>?) async throws(PushDeviceStoreError) -> [PushDeviceRegistration] {
        let sql = self.sql
        return try await reader.run(unavailable: Self.workerUnavailable) { (db) throws(PushDeviceStoreError) -> [PushDeviceRegistration] in
            try Self.list(namespace: namespace, platforms: platforms, db: db, sql: sql)
        }
    }

    /// Reads each row's columns straight from the statement into a registration.
    private static func list(namespace: String, platforms: Set<PushDevicePlatform>?, db: SQLiteConnection, sql: Statements) throws(PushDeviceStoreError)
        -> [PushDeviceRegistration]
    {
        try db.withStatement(sql.list) { (statement) throws(PushDeviceStoreError) -> [PushDeviceRegistration] in
            try statement.bind(1, namespace)
            var devices: [PushDeviceRegistration] = []
            devices.reserveCapacity(64)
            while try statement.step() {
                // A row another program wrote with a platform we cannot reach is skipped.
                guard let platform = statement.bytes(1).flatMap(PushDevicePlatform.init(storedBytes:)) else { continue }
                if let platforms, !platforms.contains(platform) { continue }
                guard let deviceId = statement.text(0), let token = statement.text(2) else { continue }
                // A stored key that no longer parses is treated as absent: the device is skipped
                // (missing_push_key) until it re-registers, rather than failing the whole dispatch.
                let key = statement.bytes(3).flatMap(PushKey.init(storedBase64:))
                devices.append(
                    PushDeviceRegistration(
                        namespace: namespace, deviceId: deviceId, platform: platform, token: token, pushKey: key,
                        createdAt: statement.int64(4), updatedAt: statement.int64(5)))
            }
            return devices
        }
    }

    // MARK: - Schema

    /// Creates the table in a new database, migrates one we created forward, and checks that a
    /// table we did not create (an adopted hub database) has the columns and unique key we
    /// rely on. Returns whether `id` is an INTEGER PRIMARY KEY (then SQLite assigns it).
    ///
    /// A schema that is already current is only read (a deferred read transaction, which in WAL
    /// mode never waits for a writer): opening the store to list devices must not queue behind
    /// another process's write. The write lock is taken only when there is something to create.
    private static func migrate(_ db: SQLiteConnection, table: String, path: String) throws(PushDeviceStoreError) -> Bool {
        if let idIsInteger = try currentSchema(db, table: table, path: path) { return idIsInteger }
        return try db.transaction { () throws(PushDeviceStoreError) -> Bool in
            let version = try db.query("PRAGMA user_version").first?.first?.integer ?? 0
            let exists = try !db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)]).isEmpty
            if !exists {
                try db.execute(
                    """
                    CREATE TABLE "\(table)" (
                        id INTEGER PRIMARY KEY,
                        namespace TEXT NOT NULL,
                        token TEXT NOT NULL,
                        platform TEXT NOT NULL,
                        device_id TEXT NOT NULL,
                        push_key TEXT,
                        created_at INTEGER NOT NULL,
                        updated_at INTEGER NOT NULL,
                        UNIQUE (namespace, device_id, platform)
                    )
                    """)
                if version == 0 { try db.execute("PRAGMA user_version = \(schemaVersion)") }
            }
            // Version 2 (our own tables only, created now or by version 1): a covering index in
            // listing order, so a dispatch's device read is one range scan, with no row lookups
            // and no sort. It duplicates the rows; an adopted hub database is left without it.
            let ours = !exists || (1...schemaVersion).contains(version)
            if ours {
                try db.execute(
                    "CREATE INDEX IF NOT EXISTS \"\(table)_listing\" ON \"\(table)\" (namespace, updated_at, id, device_id, platform, token, push_key, created_at)")
                if version >= 1 && version < schemaVersion { try db.execute("PRAGMA user_version = \(schemaVersion)") }
            }
            // Version 1 is the first schema; later versions add their steps here, each guarded
            // by `version < N` and only for databases whose table this code created.
            let idIsInteger = try checkColumns(db, table: table, path: path)
            try db.execute("CREATE INDEX IF NOT EXISTS \"\(table)_token\" ON \"\(table)\" (token)")
            return idIsInteger
        }
    }

    /// Whether `id` is an INTEGER PRIMARY KEY when the schema needs nothing created or migrated
    /// (read without the write lock), or nil when `migrate` must take the write lock.
    private static func currentSchema(_ db: SQLiteConnection, table: String, path: String) throws(PushDeviceStoreError) -> Bool? {
        try db.query("BEGIN DEFERRED")
        defer { _ = try? db.query("COMMIT") }
        let version = try db.query("PRAGMA user_version").first?.first?.integer ?? 0
        let indexes = Set(
            try db.query("SELECT name FROM sqlite_master WHERE tbl_name = ? AND type IN ('table', 'index')", [.text(table)])
                .compactMap { $0.first?.text })
        guard indexes.contains(table), indexes.contains("\(table)_token") else { return nil }
        // Ours (versions 1...current) must be at the current version with its listing index.
        if (1...schemaVersion).contains(version), version < schemaVersion || !indexes.contains("\(table)_listing") { return nil }
        return try checkColumns(db, table: table, path: path)
    }

    /// Checks the columns and unique key we rely on; returns whether `id` is an INTEGER PRIMARY KEY.
    private static func checkColumns(_ db: SQLiteConnection, table: String, path: String) throws(PushDeviceStoreError) -> Bool {
        let columns = try db.query("SELECT name, type, pk FROM pragma_table_info(?)", [.text(table)])
        let names = Set(columns.compactMap { $0.first?.text?.lowercased() })
        let required = ["id", "namespace", "token", "platform", "device_id", "push_key", "created_at", "updated_at"]
        let missing = required.filter { !names.contains($0) }
        guard missing.isEmpty else {
            throw PushDeviceStoreError.incompatibleSchema.with(
                "table \"\(table)\" in \(path) lacks column(s) \(missing.joined(separator: ", ")): choose another table name or database")
        }
        guard try hasUniqueKey(db, table: table) else {
            throw PushDeviceStoreError.incompatibleSchema.with(
                "table \"\(table)\" in \(path) has no unique key on (namespace, device_id, platform): choose another table name or database")
        }
        let idColumn = columns.first { $0.first?.text?.lowercased() == "id" }
        let idType = idColumn?[1].text?.uppercased() ?? ""
        return idType == "INTEGER" && (idColumn?[2].integer ?? 0) > 0
    }

    private static func hasUniqueKey(_ db: SQLiteConnection, table: String) throws(PushDeviceStoreError) -> Bool {
        let indexes = try db.query("SELECT name FROM pragma_index_list(?) WHERE \"unique\" = 1", [.text(table)])
        for index in indexes {
            guard let name = index.first?.text else { continue }
            let columns = try db.query("SELECT name FROM pragma_index_info(?)", [.text(name)]).compactMap { $0.first?.text?.lowercased() }
            if Set(columns) == ["namespace", "device_id", "platform"] { return true }
        }
        return false
    }

    static func isPlainIdentifier(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 64 else { return false }
        let isLetter = { (c: UInt8) in (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F }
        return isLetter(first) && bytes.allSatisfy { isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) }
    }

    /// A random row id (the JavaScript hub uses random UUIDs).
    private static func newRowId() -> String {
        let bytes = (try? SecureRandom.bytes(16)) ?? Digest.sha256(Array(String(UInt64.random(in: .min ... .max)).utf8)).prefix(16).map { $0 }
        let hex = Digest.hex(bytes)
        let chars = Array(hex)
        return String(chars[0..<8]) + "-" + String(chars[8..<12]) + "-" + String(chars[12..<16]) + "-" + String(chars[16..<20]) + "-"
            + String(chars[20..<32])
    }

    /// Creates missing directories (0700) and the database file (0600) before SQLite opens it,
    /// so nothing the registry creates is readable by other users.
    private static func createFileIfMissing(_ path: String) throws(PushDeviceStoreError) {
        guard !path.isEmpty else { throw PushDeviceStoreError.cannotOpen.with("device database path is empty") }
        var info = stat()
        if stat(path, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR {
                throw PushDeviceStoreError.cannotOpen.with("device database path \(path) is a directory: give a file path")
            }
            return
        }
        let components = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        var directory = path.hasPrefix("/") ? "" : "."
        for component in components where !component.isEmpty {
            directory += "/" + component
            if stat(directory, &info) == 0 { continue }
            if mkdir(directory, 0o700) != 0 && errno != EEXIST {
                throw creationError(path: directory, what: "directory", errno: errno)
            }
        }
        let fd = Platform.open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        if fd < 0 {
            if errno == EEXIST { return }  // Another process created it first: fine.
            throw creationError(path: path, what: "file", errno: errno)
        }
        close(fd)
    }

    private static func creationError(path: String, what: String, errno code: Int32) -> PushDeviceStoreError {
        let reason = String(cString: strerror(code))
        if code == EROFS || code == EACCES || code == EPERM {
            return PushDeviceStoreError.readOnly.with(
                "cannot create device database \(what) \(path): \(reason); choose a writable data directory (--data-dir or HAPI_HOME)")
        }
        return PushDeviceStoreError.cannotOpen.with("cannot create device database \(what) \(path): \(reason)")
    }

    /// The SQL text, built once per table name.
    private struct Statements: Sendable {
        let idIsInteger: Bool
        let deleteOtherHoldersOfToken: String
        let upsert: String
        let unregister: String
        let prune: String
        let list: String

        init(table: String, idIsInteger: Bool) {
            let t = "\"\(table)\""
            self.idIsInteger = idIsInteger
            deleteOtherHoldersOfToken =
                "DELETE FROM \(t) WHERE token = ?1 AND NOT (namespace = ?2 AND device_id = ?3 AND platform = ?4)"
            let columns = "namespace, token, platform, device_id, push_key, created_at, updated_at"
            let insert =
                idIsInteger
                ? "INSERT INTO \(t) (\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?)"
                : "INSERT INTO \(t) (id, \(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
            upsert =
                insert
                + " ON CONFLICT (namespace, device_id, platform) DO UPDATE SET token = excluded.token, push_key = excluded.push_key, updated_at = excluded.updated_at"
                + " RETURNING created_at"
            unregister = "DELETE FROM \(t) WHERE namespace = ?1 AND (token = ?2 OR (platform = 'ios' AND token = ?3))"
            prune = "DELETE FROM \(t) WHERE namespace = ?1 AND token = ?2 AND updated_at <= ?3"
            // With an INTEGER PRIMARY KEY, `id` is the rowid: the listing index holds it in order.
            list =
                "SELECT device_id, platform, token, push_key, created_at, updated_at FROM \(t) WHERE namespace = ? ORDER BY updated_at DESC, "
                + (idIsInteger ? "id DESC" : "rowid DESC")
        }
    }
}
