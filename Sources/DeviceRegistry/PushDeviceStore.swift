/// Where registrations live. Two implementations ship: `SQLitePushDeviceStore` (the embedded
/// default) and `InMemoryPushDeviceStore` (for hubs that persist elsewhere, and for fast tests).
/// A hub with its own database implements this protocol; the behavioural test suite in
/// `Tests/DeviceRegistryTests` states what an implementation must do.
public protocol PushDeviceStore: Sendable {
    /// Inserts or replaces the row for (namespace, deviceId, platform) and, in the same
    /// transaction, deletes any other row holding the same token (any namespace, deviceId or
    /// platform). Keeps `createdAt` of a replaced row; sets `updatedAt` to `now`.
    func upsert(_ request: PushRegistrationRequest, now: Int64) async throws -> PushDeviceRegistration

    /// Removes the row holding `token` in `namespace`. Returns whether a row was removed;
    /// an unknown token is not an error. An iOS token matches case-insensitively.
    @discardableResult
    func unregister(namespace: String, token: String) async throws -> Bool

    /// Removes the row holding `token` in `namespace` after the provider said the token is
    /// dead, unless the row was re-registered after `notAfter` (milliseconds; APNs reports
    /// when the token became invalid, and a fresher registration must survive).
    @discardableResult
    func prune(namespace: String, token: String, notAfter: Int64?) async throws -> Bool

    /// The namespace's devices, newest `updatedAt` first, optionally only some platforms.
    func devices(namespace: String, platforms: Set<PushDevicePlatform>?) async throws -> [PushDeviceRegistration]
}

extension PushDeviceStore {
    /// Prunes regardless of when the row was last updated.
    @discardableResult
    public func prune(namespace: String, token: String) async throws -> Bool {
        try await prune(namespace: namespace, token: token, notAfter: nil)
    }

    /// All of the namespace's devices, newest first.
    public func devices(namespace: String) async throws -> [PushDeviceRegistration] {
        try await devices(namespace: namespace, platforms: nil)
    }
}
