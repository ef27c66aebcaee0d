import CHapiSQLite

/// One SQLite connection and its prepared statements. Not thread-safe by itself: each one is
/// owned by one of the store's worker threads, which alone uses it (hence `@unchecked Sendable`).
/// Frees statements and closes the handle in `deinit`.
final class SQLiteConnection: @unchecked Sendable {
    let path: String
    private let handle: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    init(path: String, busyTimeoutMilliseconds: Int32) throws(PushDeviceStoreError) {
        self.path = path
        var db: OpaquePointer?
        // No SQLITE_OPEN_CREATE: the store creates the file itself with owner-only permissions,
        // so SQLite never creates a database somewhere we did not mean to.
        let rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteConnection.error(rc, message, path: path)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        if sqlite3_db_readonly(db, "main") == 1 {
            throw PushDeviceStoreError.readOnly.with(
                "device database \(path) opened read-only: give the hub's user write access to the file and its directory")
        }
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements without results.
    func execute(_ sql: String) throws(PushDeviceStoreError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw lastError(rc) }
    }

    /// Runs a cached prepared statement with `bindings`, returning every row.
    @discardableResult
    func query(_ sql: String, _ bindings: [SQLiteValue] = []) throws(PushDeviceStoreError) -> [[SQLiteValue]] {
        try withStatement(sql) { (statement) throws(PushDeviceStoreError) -> [[SQLiteValue]] in
            for (offset, value) in bindings.enumerated() {
                let index = Int32(offset + 1)
                switch value {
                case .null: try statement.bindNull(index)
                case .integer(let i): try statement.bind(index, i)
                case .text(let s): try statement.bind(index, s)
                }
            }
            var rows: [[SQLiteValue]] = []
            while try statement.step() {
                let count = statement.columnCount
                var row: [SQLiteValue] = []
                row.reserveCapacity(Int(count))
                for column in 0..<count {
                    if statement.isNull(column) {
                        row.append(.null)
                    } else if statement.isInteger(column) {
                        row.append(.integer(statement.int64(column)))
                    } else {
                        row.append(statement.text(column).map { .text($0) } ?? .null)
                    }
                }
                rows.append(row)
            }
            return rows
        }
    }

    /// Runs `body` with the cached prepared statement for `sql`, then resets it and clears its
    /// bindings, so callers bind and read columns in place without building intermediate rows.
    func withStatement<T>(_ sql: String, _ body: (SQLiteStatement) throws(PushDeviceStoreError) -> T) throws(PushDeviceStoreError) -> T {
        let statement = SQLiteStatement(handle: try prepared(sql), connection: self)
        defer {
            sqlite3_reset(statement.handle)
            sqlite3_clear_bindings(statement.handle)
        }
        return try body(statement)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT` (taking the write lock up front, so two
    /// processes never deadlock upgrading a read lock), rolling back on any error.
    func transaction<T>(_ body: () throws(PushDeviceStoreError) -> T) throws(PushDeviceStoreError) -> T {
        try query("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try query("COMMIT")
            return result
        } catch {
            _ = sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    private func prepared(_ sql: String) throws(PushDeviceStoreError) -> OpaquePointer {
        if let cached = statements[sql] { return cached }
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw lastError(rc) }
        statements[sql] = statement
        return statement
    }

    fileprivate func lastError(_ rc: Int32) -> PushDeviceStoreError {
        SQLiteConnection.error(rc, String(cString: sqlite3_errmsg(handle)), path: path)
    }

    /// Maps an SQLite result code to a typed error that names the file and the remedy.
    static func error(_ rc: Int32, _ detail: String, path: String) -> PushDeviceStoreError {
        switch rc & 0xFF {
        case SQLITE_NOTADB:
            return PushDeviceStoreError.notADatabase.with(
                "\(path) is not an SQLite database (left untouched): point the registry at another file or move this one away")
        case SQLITE_READONLY:
            return PushDeviceStoreError.readOnly.with(
                "device database \(path) is read-only (\(detail)): give the hub's user write access to the file and its directory")
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH:
            return PushDeviceStoreError.cannotOpen.with(
                "cannot open device database \(path) (\(detail)): check that the directory exists and is writable by the hub's user")
        case SQLITE_BUSY, SQLITE_LOCKED:
            return PushDeviceStoreError.busy.with(
                "device database \(path) stayed locked by another writer past the busy timeout: retry, or look for a stuck process")
        case SQLITE_CORRUPT:
            return PushDeviceStoreError.corrupt.with(
                "device database \(path) is corrupt (\(detail)): restore it from a backup or move it away so a new one is created")
        case SQLITE_IOERR, SQLITE_FULL:
            return PushDeviceStoreError.ioFailure.with("disk I/O error on device database \(path) (\(detail)): check free space and the disk")
        default:
            return PushDeviceStoreError.failure.with("device database \(path): SQLite error \(rc) (\(detail))")
        }
    }
}

/// A cached prepared statement while it is in use (see `SQLiteConnection.withStatement`).
struct SQLiteStatement {
    let handle: OpaquePointer
    let connection: SQLiteConnection

    func bind(_ index: Int32, _ text: String) throws(PushDeviceStoreError) {
        let rc = sqlite3_bind_text(handle, index, text, -1, hapi_sqlite_transient())
        guard rc == SQLITE_OK else { throw connection.lastError(rc) }
    }

    func bind(_ index: Int32, _ value: Int64) throws(PushDeviceStoreError) {
        let rc = sqlite3_bind_int64(handle, index, value)
        guard rc == SQLITE_OK else { throw connection.lastError(rc) }
    }

    func bindNull(_ index: Int32) throws(PushDeviceStoreError) {
        let rc = sqlite3_bind_null(handle, index)
        guard rc == SQLITE_OK else { throw connection.lastError(rc) }
    }

    /// True when a row is ready, false when the statement is done.
    func step() throws(PushDeviceStoreError) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw connection.lastError(rc)
    }

    var columnCount: Int32 { sqlite3_column_count(handle) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func isInteger(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_INTEGER }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    /// The column's UTF-8 bytes, valid until the next step or reset; nil for NULL.
    func bytes(_ column: Int32) -> UnsafeBufferPointer<UInt8>? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        return UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, column)))
    }

    func text(_ column: Int32) -> String? {
        bytes(column).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// The values the registry reads and writes.
enum SQLiteValue: Equatable {
    case null
    case integer(Int64)
    case text(String)

    var text: String? {
        if case .text(let s) = self { return s }
        return nil
    }

    var integer: Int64? {
        if case .integer(let i) = self { return i }
        return nil
    }
}
