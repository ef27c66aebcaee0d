import DeviceRegistry

/// Changing the Web Push VAPID key pair without cutting off every browser at once (what
/// `hapi-push webpush rotate-vapid-keys` runs). The new pair becomes settings.json's
/// `vapidKeys` (the JavaScript hub's member, so both hubs serve it and new subscriptions use
/// it); the replaced pair is kept under `previousVapidKeys`, which the JavaScript hub does not
/// read. A push the push service refuses with 401 or 403 for the current key is sent once more
/// with each kept pair, and the one that worked is remembered for that subscription until the
/// browser subscribes again (the PWA does when `vapid-public-key` changes). A running hub takes
/// the new pair at its next start.
public enum PushVAPIDKeyRotation {
    /// What `rotate` did.
    public struct Result: Sendable, Equatable {
        /// The public key served from now on (URL-safe base64, as browsers subscribe with it).
        public let publicKey: String
        /// The public keys of the kept pairs, newest first.
        public let previousPublicKeys: [String]
    }

    /// Generates a new pair and keeps the one it replaces (at most 4 kept, the oldest dropped).
    /// - Parameter now: milliseconds since 1970, written as the kept pair's `retiredAt`.
    public static func rotate(dataDirectory: String, now: Int64 = PushDeviceRegistry.systemMilliseconds()) throws(PushSettingsFileError) -> Result {
        let rotation = try VAPIDKeyFile.rotate(SettingsFile(directory: dataDirectory), now: now)
        return Result(publicKey: rotation.publicKey, previousPublicKeys: rotation.previousPublicKeys)
    }

    /// Ends the grace: removes the kept pairs from settings.json and, when `store` is given,
    /// what it remembered about which subscription needs which. Returns the public keys dropped.
    @discardableResult
    public static func dropPrevious(dataDirectory: String, store: (any PushWebSubscriptionStore)?) async throws -> [String] {
        let dropped = try VAPIDKeyFile.dropPrevious(SettingsFile(directory: dataDirectory))
        try await store?.forgetWebSubscriptionVAPIDKeys()
        return dropped
    }
}
