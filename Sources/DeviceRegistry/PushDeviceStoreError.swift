/// Why the device store could not do its job. Names the file or server and says what to do;
/// never contains a token, key or password. Compare against the static members (equality is on the kind).
public struct PushDeviceStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Code: Sendable, Hashable {
        case notADatabase, incompatibleSchema, readOnly, cannotOpen, busy, corrupt, ioFailure, invalidTableName, failure
        case unavailable, unknownOutcome, invalidDatabaseURL, postgresNotBuilt
    }

    package let code: Code
    /// What went wrong, where, and what to do.
    public let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func == (lhs: PushDeviceStoreError, rhs: PushDeviceStoreError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { message }

    /// The file exists but is not an SQLite database. It was left untouched.
    public static let notADatabase = PushDeviceStoreError(.notADatabase, "not an SQLite database")
    /// The table exists but lacks the columns or unique key the registry needs.
    public static let incompatibleSchema = PushDeviceStoreError(.incompatibleSchema, "incompatible device table")
    /// The database or its directory cannot be written.
    public static let readOnly = PushDeviceStoreError(.readOnly, "device database is read-only")
    /// The file or its directory could not be opened or created.
    public static let cannotOpen = PushDeviceStoreError(.cannotOpen, "cannot open device database")
    /// Another writer held the database longer than the busy timeout.
    public static let busy = PushDeviceStoreError(.busy, "device database is busy")
    /// SQLite reported corruption.
    public static let corrupt = PushDeviceStoreError(.corrupt, "device database is corrupt")
    /// The disk failed or is full.
    public static let ioFailure = PushDeviceStoreError(.ioFailure, "disk I/O error on device database")
    /// The configured table name is not a plain SQL identifier.
    public static let invalidTableName = PushDeviceStoreError(.invalidTableName, "invalid device table name")
    /// Any other database failure.
    public static let failure = PushDeviceStoreError(.failure, "device database failure")
    /// The database server could not be reached or the connection was lost before the work
    /// was committed: nothing was changed. Retrying later is safe.
    public static let unavailable = PushDeviceStoreError(.unavailable, "device database server unavailable")
    /// The connection was lost while a write was being committed: it may or may not have been
    /// applied. Registrations are idempotent, so the device's next registration settles it.
    public static let unknownOutcome = PushDeviceStoreError(.unknownOutcome, "device database write outcome unknown")
    /// `HAPI_PUSH_DATABASE_URL` (or a store's URL) is not a usable `postgres://` URL.
    public static let invalidDatabaseURL = PushDeviceStoreError(.invalidDatabaseURL, "invalid device database URL")

    /// `HAPI_PUSH_DATABASE_URL` is set, but this build has no PostgreSQL registry (the package
    /// trait `PostgreSQL` was off): the hub does not fall back to SQLite, which would split the
    /// registry in two.
    public static let postgresNotBuilt = PushDeviceStoreError(.postgresNotBuilt, "this build has no PostgreSQL registry")

    package func with(_ message: String) -> PushDeviceStoreError { PushDeviceStoreError(code, message) }
}
