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
    /// After a VAPID key rotation: the previous public key a push last reached this browser
    /// with (it subscribed before the rotation and has not subscribed again); nil when the
    /// current key is the one. Kept in a table of ours, never in `push_subscriptions`.
    public let previousVAPIDPublicKey: String?

    public init(namespace: String, endpoint: String, p256dh: String, auth: String, createdAt: Int64, previousVAPIDPublicKey: String? = nil) {
        self.namespace = namespace
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
        self.createdAt = createdAt
        self.previousVAPIDPublicKey = previousVAPIDPublicKey
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
    /// Remembers the previous VAPID public key that reached a subscription after a rotation,
    /// or forgets it (nil: the current key reaches it). Adding or removing the subscription
    /// forgets it too.
    func rememberWebSubscriptionVAPIDKey(namespace: String, endpoint: String, previousPublicKey: String?) async throws
    /// Forgets every remembered key: the grace after a rotation is over.
    func forgetWebSubscriptionVAPIDKeys() async throws
}

extension PushWebSubscriptionStore {
    /// A store that keeps nothing beside the subscriptions: a push refused for the current key
    /// is still sent again with each previous one, every time.
    public func rememberWebSubscriptionVAPIDKey(namespace: String, endpoint: String, previousPublicKey: String?) async throws {}
    public func forgetWebSubscriptionVAPIDKeys() async throws {}
}
