/// Where registrations live, as a value that opens the store when asked: the same type in every
/// build. The SQLite file and an unusable choice are made here; the PostgreSQL registry's factory
/// is supplied by the DeviceRegistryPostgres product (`PushDeviceStoreFactory.postgres(_:)`), so
/// no public type changes shape with the package trait `PostgreSQL`, and a hub never switches
/// over the stores a build happens to have.
public struct PushDeviceStoreFactory: Sendable, CustomStringConvertible {
    /// `sqlite`, `postgres` or `none` (`hapi-push config`'s `registry.store`).
    public let name: String
    /// The file, the URL with its password redacted, or why there is none.
    public let location: String
    private let opener: @Sendable () async throws(PushDeviceStoreError) -> any PushDeviceStore

    /// A store of the hub's own: `name` and `location` are shown as they are (never put a
    /// password in them); `open` is called by each `open()`.
    public init(name: String, location: String, open: @escaping @Sendable () async throws(PushDeviceStoreError) -> any PushDeviceStore) {
        self.name = name
        self.location = location
        self.opener = open
    }

    /// Opens the store. The calling task suspends while it opens on threads of its own; an
    /// unusable choice throws its error rather than falling back to another store.
    public func open() async throws(PushDeviceStoreError) -> any PushDeviceStore { try await opener() }

    public var description: String { "\(name) \(location)" }

    /// The embedded default: this SQLite file.
    public static func sqlite(path: String) -> PushDeviceStoreFactory {
        PushDeviceStoreFactory(name: "sqlite", location: path) { () async throws(PushDeviceStoreError) -> any PushDeviceStore in
            try await SQLitePushDeviceStore.open(configuration: .init(path: path))
        }
    }

    /// No registry can be opened (an invalid URL, no data directory, no PostgreSQL in this
    /// build): `open()` throws `error`.
    public static func unusable(_ error: PushDeviceStoreError) -> PushDeviceStoreFactory {
        PushDeviceStoreFactory(name: "none", location: error.message) { () async throws(PushDeviceStoreError) -> any PushDeviceStore in
            throw error
        }
    }
}
