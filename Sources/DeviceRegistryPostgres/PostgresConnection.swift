import CHapiOpenSSL
import CHapiPostgres
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why one libpq call failed, before it becomes a `PushDeviceStoreError`.
enum PostgresFailure: Error {
    /// The request never left this process (no connection, or the send failed): nothing ran.
    case notSent(String)
    /// The connection broke after the request was sent: it may or may not have run.
    case lost(String)
    /// The server answered with an error.
    case server(sqlState: String, message: String)

    var message: String {
        switch self {
        case .notSent(let message), .lost(let message): return message
        case .server(let state, let message): return state.isEmpty ? message : "\(message) (SQLSTATE \(state))"
        }
    }

    var isConnectionFailure: Bool {
        switch self {
        case .notSent, .lost: return true
        case .server(let state, _): return state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03"
        }
    }

    /// A conflict with a concurrent transaction that a retry settles: a unique violation (two
    /// processes registering one token at once), a deadlock, a serialization failure.
    var isRetryableConflict: Bool {
        if case .server(let state, _) = self { return state == "23505" || state == "40P01" || state == "40001" }
        return false
    }
}

/// One libpq connection owned by one worker thread of the store (never shared, never used
/// from a Swift concurrency thread), with the store's statements prepared on it.
final class PostgresConnection {
    private let handle: OpaquePointer
    private(set) var preparedNames: Set<String> = []

    /// Connects (blocking; on a worker thread). Keywords before `dbname` are defaults the URL
    /// may override; `dbname` carries the whole URL (libpq's `expand_dbname`).
    init(url: String, connectTimeoutSeconds: Int, redact: (String) -> String) throws(PostgresFailure) {
        let keywords = ["connect_timeout", "application_name", "keepalives_idle", "keepalives_interval", "keepalives_count", "dbname"]
        let values = ["\(max(1, connectTimeoutSeconds))", "hapi-push", "10", "5", "3", url]
        // Both lists end with a NULL entry, as libpq requires.
        let connection = CStringArray(keywords.map { Optional($0) } + [nil]).withPointers { keywordPointers in
            CStringArray(values.map { Optional($0) } + [nil]).withPointers { valuePointers in PQconnectdbParams(keywordPointers, valuePointers, 1) }
        }
        // Connecting drew random bytes (SCRAM, TLS) through a per-thread DRBG OpenSSL frees only
        // when the thread ends, and a store thread lives as long as the store: release it now
        // (OpenSSL makes it again if this thread needs it), so it is never held unseen — LSan
        // cannot see into the pthread key that keeps it and reported it as a leak.
        OPENSSL_thread_stop()
        guard let connection else { throw .notSent("out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = redact(Self.text(PQerrorMessage(connection)))
            PQfinish(connection)
            throw .notSent(message)
        }
        hapi_pq_silence_notices(connection)
        handle = connection
    }

    deinit { PQfinish(handle) }

    /// False when the server has closed this connection while it sat idle (a restart): the
    /// socket is readable and reading it finds the end. Checked before each use, so a stale
    /// pooled connection is replaced before a write is sent on it rather than after.
    var isAlive: Bool {
        guard PQstatus(handle) == CONNECTION_OK else { return false }
        let fd = PQsocket(handle)
        guard fd >= 0 else { return false }
        // An idle connection has nothing to read unless the server is ending it (its last
        // message, then the end of the stream): read until nothing is left or the end shows.
        for _ in 0..<4 {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 0) > 0 else { break }
            if PQconsumeInput(handle) == 0 { return false }
            while let notice = PQnotifies(handle) { PQfreemem(notice) }
            if entry.revents & Int16(POLLHUP | POLLERR) != 0 { return false }
        }
        return PQstatus(handle) == CONNECTION_OK
    }

    /// Runs a statement with no parameters (BEGIN, SET, DDL).
    @discardableResult
    func execute(_ sql: String) throws(PostgresFailure) -> PostgresResult {
        guard PQsendQuery(handle, sql) == 1 else { throw .notSent(lastError) }
        return try collect()
    }

    /// Runs a statement with text parameters (nil is NULL), unprepared.
    @discardableResult
    func execute(_ sql: String, _ parameters: [String?]) throws(PostgresFailure) -> PostgresResult {
        let sent = CStringArray(parameters).withPointers { pointers in
            PQsendQueryParams(handle, sql, Int32(parameters.count), nil, pointers, nil, nil, 0)
        }
        guard sent == 1 else { throw .notSent(lastError) }
        return try collect()
    }

    /// Prepares `sql` under `name` once per connection.
    func prepare(_ name: String, _ sql: String) throws(PostgresFailure) {
        guard !preparedNames.contains(name) else { return }
        guard PQsendPrepare(handle, name, sql, 0, nil) == 1 else { throw .notSent(lastError) }
        _ = try collect()
        preparedNames.insert(name)
    }

    /// Runs the prepared statement `name` with text parameters (nil is NULL).
    @discardableResult
    func run(_ name: String, _ parameters: [String?]) throws(PostgresFailure) -> PostgresResult {
        let sent = CStringArray(parameters).withPointers { pointers in
            PQsendQueryPrepared(handle, name, Int32(parameters.count), pointers, nil, nil, 0)
        }
        guard sent == 1 else { throw .notSent(lastError) }
        return try collect()
    }

    /// Reads every result of the request just sent; the last one is kept, the first error
    /// thrown once the connection is idle again.
    private func collect() throws(PostgresFailure) -> PostgresResult {
        var kept: OpaquePointer?
        var failure: PostgresFailure?
        while let result = PQgetResult(handle) {
            let status = PQresultStatus(result)
            if status == PGRES_FATAL_ERROR || status == PGRES_NONFATAL_ERROR || status == PGRES_BAD_RESPONSE {
                if failure == nil {
                    let state = PQresultErrorField(result, hapi_pq_diag_sqlstate()).map { String(cString: $0) } ?? ""
                    let message = Self.text(PQresultErrorField(result, hapi_pq_diag_message()) ?? PQresultErrorMessage(result))
                    failure = state.isEmpty && PQstatus(handle) != CONNECTION_OK ? .lost(message) : .server(sqlState: state, message: message)
                }
                PQclear(result)
            } else {
                if let kept { PQclear(kept) }
                kept = result
            }
        }
        if PQstatus(handle) != CONNECTION_OK {
            if let kept { PQclear(kept) }
            if case .server(let state, let message)? = failure, !state.isEmpty { throw .server(sqlState: state, message: message) }
            throw .lost(failure?.message ?? lastError)
        }
        if let failure {
            if let kept { PQclear(kept) }
            throw failure
        }
        guard let kept else { throw .lost("no result from the server") }
        return PostgresResult(kept)
    }

    private var lastError: String { Self.text(PQerrorMessage(handle)) }

    /// A C message as a bounded, single-line Swift string.
    static func text(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "" }
        let raw = String(cString: pointer)
        let cleaned = raw.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : String($0) }.joined()
        let trimmed = cleaned.trimmingSpaces
        return trimmed.count > 300 ? String(trimmed.prefix(300)) + "…" : trimmed
    }
}

/// One `PGresult`, cleared when released. Columns are read in place.
final class PostgresResult {
    let handle: OpaquePointer

    init(_ handle: OpaquePointer) { self.handle = handle }
    deinit { PQclear(handle) }

    var rowCount: Int { Int(PQntuples(handle)) }
    /// Rows changed by an INSERT, UPDATE or DELETE.
    var changedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    func isNull(_ row: Int, _ column: Int) -> Bool { PQgetisnull(handle, Int32(row), Int32(column)) == 1 }

    /// The value's bytes (text format), valid while the result lives; nil for NULL.
    func bytes(_ row: Int, _ column: Int) -> UnsafeBufferPointer<UInt8>? {
        guard !isNull(row, column), let value = PQgetvalue(handle, Int32(row), Int32(column)) else { return nil }
        let count = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return value.withMemoryRebound(to: UInt8.self, capacity: count) { UnsafeBufferPointer(start: $0, count: count) }
    }

    func text(_ row: Int, _ column: Int) -> String? {
        bytes(row, column).map { String(decoding: $0, as: UTF8.self) }
    }

    /// A decimal integer column, parsed from its bytes without making a String.
    func int64(_ row: Int, _ column: Int) -> Int64? {
        guard let bytes = bytes(row, column), !bytes.isEmpty else { return nil }
        var value: Int64 = 0
        var negative = false
        for (offset, byte) in bytes.enumerated() {
            if offset == 0, byte == UInt8(ascii: "-") {
                negative = true
                continue
            }
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(byte - 0x30))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return negative ? -value : value
    }
}

/// NUL-terminated copies of strings in one buffer, and the pointer array libpq takes (nil
/// entries stay nil: SQL NULL).
struct CStringArray {
    private var storage: [CChar] = []
    private var offsets: [Int?] = []

    init(_ strings: [String?]) {
        for string in strings {
            guard let string else {
                offsets.append(nil)
                continue
            }
            offsets.append(storage.count)
            storage.append(contentsOf: string.utf8.map { CChar(bitPattern: $0) })
            storage.append(0)
        }
    }

    init(_ strings: [String]) { self.init(strings.map { Optional($0) }) }

    func withPointers<T>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
        storage.withUnsafeBufferPointer { buffer in
            let pointers: [UnsafePointer<CChar>?] = offsets.map { offset -> UnsafePointer<CChar>? in
                guard let offset, let base = buffer.baseAddress else { return nil }
                return base + offset
            }
            return pointers.withUnsafeBufferPointer { list in
                // An empty list still needs a valid pointer.
                guard let base = list.baseAddress else {
                    var none: UnsafePointer<CChar>? = nil
                    return withUnsafePointer(to: &none) { body($0) }
                }
                return body(base)
            }
        }
    }
}

extension String {
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while scalars.first == " " { scalars.removeFirst() }
        while scalars.last == " " { scalars.removeLast() }
        return String(scalars)
    }
}
