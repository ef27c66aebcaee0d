import PushEnvelope

/// One browser's Web Push subscription (`PushSubscription.toJSON()` of the PWA), a row of the
/// JavaScript hub's `push_subscriptions` table. `endpoint` is a capability URL: whoever holds
/// it can push to that browser, so it is never logged or printed; `fingerprint` names it.
public struct PushWebSubscription: Sendable, Equatable, CustomStringConvertible {
    public let namespace: String
    /// The push service URL the browser gave. Secret-ish: never log it.
    public let endpoint: String
    /// The browser's P-256 public key, URL-safe base64 as the browser sent it.
    public let p256dh: String
    /// The browser's 16-byte auth secret, URL-safe base64 as the browser sent it.
    public let auth: String
    /// Milliseconds since 1970.
    public let createdAt: Int64

    public init(namespace: String, endpoint: String, p256dh: String, auth: String, createdAt: Int64) {
        self.namespace = namespace
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
        self.createdAt = createdAt
    }

    /// The first 12 hex digits of the endpoint's SHA-256: a name safe to log.
    public var fingerprint: String { TokenFingerprint.of(endpoint) }

    /// `scheme://host[:port]` of the endpoint, safe to show (the capability is in the path).
    public var origin: String { PushWebEndpoint.origin(of: endpoint) ?? "invalid" }

    public var description: String { "PushWebSubscription(\(namespace), \(origin) \(fingerprint))" }
}

/// Where Web Push subscriptions live: `SQLitePushDeviceStore` and `PostgresPushDeviceStore`
/// keep them in the registry's database, in the JavaScript hub's `push_subscriptions` table.
public protocol PushWebSubscriptionStore: Sendable {
    /// Inserts, or on the same (namespace, endpoint) replaces the keys and `created_at`.
    func addWebSubscription(namespace: String, endpoint: String, p256dh: String, auth: String, now: Int64) async throws
    /// Deletes by (namespace, endpoint); true when a row went.
    @discardableResult
    func removeWebSubscription(namespace: String, endpoint: String) async throws -> Bool
    /// The namespace's subscriptions, newest `created_at` first.
    func webSubscriptions(namespace: String) async throws -> [PushWebSubscription]
}
