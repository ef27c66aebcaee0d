public import DeviceRegistry
#if PostgreSQL
import DeviceRegistryPostgres
#endif

extension PushConfiguration.RegistryStore {
    /// Opens the registry this configuration names (`HAPI_PUSH_DATABASE_URL`, else SQLite in
    /// the data directory). The calling task suspends while the store opens on threads of its
    /// own; an unusable choice throws its error rather than falling back to another store.
    public func open() async throws(PushDeviceStoreError) -> any PushDeviceStore {
        switch self {
        case .sqlite(let path): return try await SQLitePushDeviceStore.open(configuration: .init(path: path))
        #if PostgreSQL
        case .postgres(let configuration): return try await PostgresPushDeviceStore.open(configuration: configuration)
        #endif
        case .unusable(let error): throw error
        }
    }
}
