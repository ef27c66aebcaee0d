public import DeviceRegistry

extension PushDeviceStoreFactory {
    /// `HAPI_PUSH_DATABASE_URL`: a PostgreSQL table shared by every hub process, shown by its
    /// redacted URL.
    public static func postgres(_ configuration: PostgresPushDeviceStore.Configuration) -> PushDeviceStoreFactory {
        PushDeviceStoreFactory(name: "postgres", location: configuration.redactedURL) { () async throws(PushDeviceStoreError) -> any PushDeviceStore in
            try await PostgresPushDeviceStore.open(configuration: configuration)
        }
    }
}
