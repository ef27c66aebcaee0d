public import DeviceRegistry
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushEnvelope
import PushSync

/// Registrations in a PostgreSQL table: for a hub that runs as several processes or on several
/// hosts sharing one registry (`HAPI_PUSH_DATABASE_URL`).
///
/// The table is the `fcm_devices` layout (timestamps in milliseconds, `bigint`), created and
/// migrated on open, or an existing table that is checked and adopted. The registry's
/// invariants hold across processes because the database enforces them: a unique index on
/// `(namespace, device_id, platform)` carries the upsert, and a unique index on `token` makes a
/// token in two rows impossible, whoever writes; a registration that collides with a concurrent
/// one for the same token is retried (docs/architecture.md).
///
/// Every libpq call runs on the store's own threads, one connection each (a small bounded
/// pool), never on a Swift concurrency thread. A connection lost to a server restart is
/// replaced: reads are retried once; a write whose outcome cannot be known throws
/// `PushDeviceStoreError.unknownOutcome` and is never retried blindly.
public final class PostgresPushDeviceStore: PushDeviceStore {
    public struct Configuration: Sendable, CustomStringConvertible, CustomReflectable {
        /// The libpq URL (`postgres://` or `postgresql://`, TLS by its `sslmode`). It may
        /// hold a password: it is never shown; `redactedURL` is.
        let url: String
        /// The URL with any password replaced by `***`: safe to print and log.
        public let redactedURL: String
        /// The table to use; a plain SQL identifier.
        public var tableName: String
        /// Connections (and threads) at most: registrations and reads beyond it queue.
        public var maximumConnections: Int
        /// Each statement is cancelled by the server after this long (`statement_timeout`).
        public var statementTimeoutMilliseconds: Int
        /// How long a connection attempt may take.
        public var connectTimeoutSeconds: Int
        /// The password the URL carries, to scrub from any message that might echo it.
        let password: String?

        /// Checks `url` without connecting: libpq's URI form, `postgres://` or `postgresql://`.
        public init(
            url: String, tableName: String = PostgresPushDeviceStore.defaultTableName, maximumConnections: Int = 4,
            statementTimeoutMilliseconds: Int = 5000, connectTimeoutSeconds: Int = 5
        ) throws(PushDeviceStoreError) {
            let parsed = try PostgresURL(url)
            self.url = url
            self.redactedURL = parsed.redacted
            self.password = parsed.password
            self.tableName = tableName
            self.maximumConnections = min(max(1, maximumConnections), 64)
            self.statementTimeoutMilliseconds = max(1, statementTimeoutMilliseconds)
            self.connectTimeoutSeconds = max(1, connectTimeoutSeconds)
        }

        /// Whether the URL carries a password (in its user part or a `password=` parameter).
        public var hasPassword: Bool { password != nil }

        /// Any text shaped like a database URL with its password replaced by `***` (for
        /// showing a value that may not even be valid).
        public static func redact(_ url: String) -> String { PostgresURL.redact(url) }

        public var description: String { "PostgreSQL \(redactedURL) table \(tableName)" }
        public var customMirror: Mirror {
            Mirror(self, children: ["redactedURL": redactedURL, "tableName": tableName, "maximumConnections": maximumConnections], displayStyle: .struct)
        }

        /// Removes the password from a message (libpq does not echo it, but nothing relies on that).
        func redact(_ message: String) -> String {
            guard let password, password.count >= 3 else { return message }
            return message.replacing(password, with: "***")
        }
    }

    /// The JavaScript hub's table name.
    public static let defaultTableName = "fcm_devices"

    public let configuration: Configuration
    let workers: BlockingWorkers<PostgresSession>
    let statements: PostgresStatements

    private init(configuration: Configuration, workers: BlockingWorkers<PostgresSession>, statements: PostgresStatements) {
        self.configuration = configuration
        self.workers = workers
        self.statements = statements
    }

    /// Connects, creates the table or checks and migrates an existing one, and returns the
    /// store; the calling task suspends meanwhile (the work runs on the store's threads).
    public static func open(configuration: Configuration) async throws(PushDeviceStoreError) -> PostgresPushDeviceStore {
        guard PostgresStatements.isPlainIdentifier(configuration.tableName) else {
            throw PushDeviceStoreError.invalidTableName.with(
                "device table name \"\(configuration.tableName)\" must be a plain SQL identifier (letters, digits, underscore)")
        }
        let workers = BlockingWorkers<PostgresSession>(name: "hapi-postgres", count: configuration.maximumConnections) {
            PostgresSession(configuration: configuration)
        }
        let unavailable = workerUnavailable(configuration)
        let statements = try await workers.run(unavailable: unavailable) { (session) throws(PushDeviceStoreError) -> PostgresStatements in
            try session.read { (db) throws(PostgresFailure) -> PostgresStatements in
                try PostgresSchema.migrate(db, table: configuration.tableName, location: configuration.redactedURL)
            }
        }
        return PostgresPushDeviceStore(configuration: configuration, workers: workers, statements: statements)
    }

    /// Opens the store for a URL with the default table and pool.
    public static func open(url: String) async throws(PushDeviceStoreError) -> PostgresPushDeviceStore {
        try await open(configuration: Configuration(url: url))
    }

    static func workerUnavailable(_ configuration: Configuration) -> PushDeviceStoreError {
        PushDeviceStoreError.failure.with("PostgreSQL registry \(configuration.redactedURL): no worker thread could be started")
    }

    public func upsert(_ request: PushRegistrationRequest, now: Int64) async throws(PushDeviceStoreError) -> PushDeviceRegistration {
        let statements = self.statements
        let createdAt = try await workers.run(unavailable: Self.workerUnavailable(configuration)) { (session) throws(PushDeviceStoreError) -> Int64 in
            try session.transaction(statements) { (db) throws(PostgresFailure) -> Int64 in
                try db.run(PostgresStatements.evictName, [request.token, request.namespace, request.deviceId, request.platform.rawValue])
                var parameters: [String?] = [
                    request.namespace, request.token, request.platform.rawValue, request.deviceId, request.pushKey?.base64, String(now),
                ]
                if !statements.idIsGenerated { parameters.append(PostgresStatements.newRowId()) }
                let result = try db.run(PostgresStatements.upsertName, parameters)
                return result.rowCount > 0 ? result.int64(0, 0) ?? now : now
            }
        }
        return PushDeviceRegistration(
            namespace: request.namespace, deviceId: request.deviceId, platform: request.platform, token: request.token,
            pushKey: request.pushKey, createdAt: createdAt, updatedAt: now)
    }

    @discardableResult
    public func unregister(namespace: String, token: String) async throws(PushDeviceStoreError) -> Bool {
        let statements = self.statements
        return try await workers.run(unavailable: Self.workerUnavailable(configuration)) { (session) throws(PushDeviceStoreError) -> Bool in
            try session.transaction(statements) { (db) throws(PostgresFailure) -> Bool in
                try db.run(PostgresStatements.unregisterName, [namespace, token, token.lowercased()]).changedRows > 0
            }
        }
    }

    @discardableResult
    public func prune(namespace: String, token: String, notAfter: Int64?) async throws(PushDeviceStoreError) -> Bool {
        let statements = self.statements
        return try await workers.run(unavailable: Self.workerUnavailable(configuration)) { (session) throws(PushDeviceStoreError) -> Bool in
            // One statement: the row is deleted only if, when the server locks it, it was not
            // re-registered after `notAfter` (a concurrent upsert's new updated_at is re-checked).
            try session.transaction(statements) { (db) throws(PostgresFailure) -> Bool in
                try db.run(PostgresStatements.pruneName, [namespace, token, String(notAfter ?? Int64.max)]).changedRows > 0
            }
        }
    }

    public func devices(namespace: String, platforms: Set<PushDevicePlatform>?) async throws(PushDeviceStoreError) -> [PushDeviceRegistration] {
        let statements = self.statements
        return try await workers.run(unavailable: Self.workerUnavailable(configuration)) {
            (session) throws(PushDeviceStoreError) -> [PushDeviceRegistration] in
            try session.read(statements) { (db) throws(PostgresFailure) -> [PushDeviceRegistration] in
                let result = try db.run(PostgresStatements.listName, [namespace])
                var devices: [PushDeviceRegistration] = []
                devices.reserveCapacity(result.rowCount)
                for row in 0..<result.rowCount {
                    guard let platform = result.bytes(row, 1).flatMap(PushDevicePlatform.init(storedBytes:)) else { continue }
                    if let platforms, !platforms.contains(platform) { continue }
                    guard let deviceId = result.text(row, 0), let token = result.text(row, 2) else { continue }
                    let key = result.bytes(row, 3).flatMap(PushKey.init(storedBase64:))
                    devices.append(
                        PushDeviceRegistration(
                            namespace: namespace, deviceId: deviceId, platform: platform, token: token, pushKey: key,
                            createdAt: result.int64(row, 4) ?? 0, updatedAt: result.int64(row, 5) ?? 0))
                }
                return devices
            }
        }
    }

    /// How many times, in this process, a write was re-run after colliding with a concurrent
    /// one (a unique violation on the token, a deadlock): tests read it to show a race happened.
    package static var conflictRetries: Int { PostgresSession.conflictRetries.withLock { $0 } }
}

/// One worker thread's connection, made on demand and replaced when it breaks.
final class PostgresSession {
    let configuration: PostgresPushDeviceStore.Configuration
    private var connection: PostgresConnection?
    /// Retries after conflicts, process-wide (diagnostics for tests).
    static let conflictRetries = Locked<Int>(0)
    static let maximumConflictAttempts = 12

    init(configuration: PostgresPushDeviceStore.Configuration) {
        self.configuration = configuration
    }

    /// A live connection with the statements prepared; replaces one the server dropped.
    private func ready(_ statements: PostgresStatements?) throws(PostgresFailure) -> PostgresConnection {
        if let connection, connection.isAlive {
            if let statements { try statements.prepare(on: connection) }
            return connection
        }
        connection = nil
        let fresh = try PostgresConnection(
            url: configuration.url, connectTimeoutSeconds: configuration.connectTimeoutSeconds, redact: configuration.redact)
        try fresh.execute("SET statement_timeout = \(configuration.statementTimeoutMilliseconds)")
        connection = fresh
        if let statements { try statements.prepare(on: fresh) }
        return fresh
    }

    /// A read: retried once on a fresh connection when the connection fails.
    func read<T>(_ statements: PostgresStatements? = nil, _ body: (PostgresConnection) throws(PostgresFailure) -> T) throws(PushDeviceStoreError) -> T {
        var attempt = 0
        while true {
            do {
                return try body(try ready(statements))
            } catch {
                if error.isConnectionFailure {
                    connection = nil
                    if attempt == 0 {
                        attempt += 1
                        continue
                    }
                }
                throw map(error, writing: false)
            }
        }
    }

    /// A write in a transaction: `body` between BEGIN and COMMIT. A connection lost before
    /// COMMIT was sent rolled the transaction back on the server, so it is re-run once on a
    /// fresh connection; lost during COMMIT, its outcome is unknown and reported as such. A
    /// conflict with a concurrent write (the database refused it) re-runs it after a pause.
    func transaction<T>(_ statements: PostgresStatements, _ body: (PostgresConnection) throws(PostgresFailure) -> T) throws(PushDeviceStoreError) -> T {
        var reconnects = 0
        var conflicts = 0
        while true {
            var committing = false
            let outcome = Result { () throws(PostgresFailure) -> T in
                let db = try ready(statements)
                try db.execute("BEGIN")
                let value: T
                switch Result(catching: { () throws(PostgresFailure) -> T in try body(db) }) {
                case .success(let result): value = result
                case .failure(let error):
                    if !error.isConnectionFailure { _ = try? db.execute("ROLLBACK") }
                    throw error
                }
                committing = true
                try db.execute("COMMIT")
                return value
            }
            guard case .failure(let error) = outcome else { return try outcome.mapError { map($0, writing: true) }.get() }
            var notApplied = false
            if case .notSent = error { notApplied = true }
            if error.isConnectionFailure {
                connection = nil
                if !committing { notApplied = true }
            }
            if notApplied, reconnects == 0 {
                reconnects += 1
                continue
            }
            if error.isRetryableConflict, conflicts + 1 < Self.maximumConflictAttempts {
                conflicts += 1
                Self.conflictRetries.withLock { $0 += 1 }
                // A short random pause on this worker thread so two colliding writers part.
                usleep(UInt32.random(in: 50...500) * UInt32(conflicts))
                continue
            }
            throw map(notApplied ? .notSent(error.message) : error, writing: true)
        }
    }

    /// A typed error naming the server (never the password) and what to do.
    private func map(_ failure: PostgresFailure, writing: Bool) -> PushDeviceStoreError {
        let location = "PostgreSQL registry \(configuration.redactedURL)"
        let detail = configuration.redact(failure.message)
        switch failure {
        case .notSent:
            return PushDeviceStoreError.unavailable.with("\(location) is unreachable (\(detail)): nothing was changed; check that the server is up")
        case .lost:
            if writing {
                return PushDeviceStoreError.unknownOutcome.with(
                    "\(location): the connection was lost while a write ran (\(detail)); it may or may not have been applied")
            }
            return PushDeviceStoreError.unavailable.with("\(location): the connection was lost (\(detail)); retry once the server is back")
        case .server(let state, let message):
            if state == PostgresSchema.incompatibleState { return PushDeviceStoreError.incompatibleSchema.with(message) }
            if failure.isConnectionFailure {
                if writing {
                    return PushDeviceStoreError.unknownOutcome.with(
                        "\(location): the server ended the connection while a write ran (\(detail)); it may or may not have been applied")
                }
                return PushDeviceStoreError.unavailable.with("\(location): the server ended the connection (\(detail)); retry once it is back")
            }
            if state == "57014" || state == "55P03" {
                return PushDeviceStoreError.busy.with("\(location): the statement timed out (\(detail)); look for a long-running lock")
            }
            if failure.isRetryableConflict {
                return PushDeviceStoreError.busy.with("\(location): kept colliding with concurrent writes (\(detail)); retry")
            }
            if state.hasPrefix("28") || state == "3D000" {
                return PushDeviceStoreError.cannotOpen.with("\(location): \(detail): check the user, password and database name")
            }
            if state == "25006" {
                return PushDeviceStoreError.readOnly.with("\(location) is read-only (\(detail)): point the registry at the primary server")
            }
            if state == "42501" {
                return PushDeviceStoreError.readOnly.with("\(location): permission denied (\(detail)): grant the hub's user access to the table")
            }
            return PushDeviceStoreError.failure.with("\(location): \(detail)")
        }
    }
}
