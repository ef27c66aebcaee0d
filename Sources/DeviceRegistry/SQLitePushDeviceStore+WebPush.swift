import PushSync

/// Web Push subscriptions in the registry's SQLite file, in the JavaScript hub's table: the
/// same DDL, so a hub database is adopted as it is and a new one is what the JS hub creates.
extension SQLitePushDeviceStore: PushWebSubscriptionStore {
    /// The JavaScript hub's `push_subscriptions` table and index, exactly.
    static let webPushSubscriptionsSchema = """
        CREATE TABLE IF NOT EXISTS push_subscriptions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            namespace TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            p256dh TEXT NOT NULL,
            auth TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            UNIQUE(namespace, endpoint)
        );
        CREATE INDEX IF NOT EXISTS idx_push_subscriptions_namespace ON push_subscriptions(namespace);
        """

    /// Ours, beside the JavaScript hub's table (which stays as it is): the previous VAPID public
    /// key that reached a subscription after a rotation, by (namespace, endpoint).
    static let webPushVAPIDKeysSchema = """
        CREATE TABLE IF NOT EXISTS hapi_push_web_vapid_keys (
            namespace TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            previous_public_key TEXT NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (namespace, endpoint)
        );
        """

    public func addWebSubscription(namespace: String, endpoint: String, p256dh: String, auth: String, now: Int64) async throws(PushDeviceStoreError) {
        _ = try await writer.run(unavailable: Self.workerUnavailable) { (db) throws(PushDeviceStoreError) in
            try db.query(
                """
                INSERT INTO push_subscriptions (namespace, endpoint, p256dh, auth, created_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (namespace, endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth, created_at = excluded.created_at
                """, [.text(namespace), .text(endpoint), .text(p256dh), .text(auth), .integer(now)])
            // Subscribed now: with the current key.
            try db.query("DELETE FROM hapi_push_web_vapid_keys WHERE namespace = ? AND endpoint = ?", [.text(namespace), .text(endpoint)])
        }
    }

    @discardableResult
    public func removeWebSubscription(namespace: String, endpoint: String) async throws(PushDeviceStoreError) -> Bool {
        try await writer.run(unavailable: Self.workerUnavailable) { (db) throws(PushDeviceStoreError) -> Bool in
            try db.query("DELETE FROM push_subscriptions WHERE namespace = ? AND endpoint = ?", [.text(namespace), .text(endpoint)])
            let removed = db.changes > 0
            try db.query("DELETE FROM hapi_push_web_vapid_keys WHERE namespace = ? AND endpoint = ?", [.text(namespace), .text(endpoint)])
            return removed
        }
    }

    public func webSubscriptions(namespace: String) async throws(PushDeviceStoreError) -> [PushWebSubscription] {
        try await reader.run(unavailable: Self.workerUnavailable) { (db) throws(PushDeviceStoreError) -> [PushWebSubscription] in
            let rows = try db.query(
                """
                SELECT s.endpoint, s.p256dh, s.auth, s.created_at, k.previous_public_key FROM push_subscriptions s
                LEFT JOIN hapi_push_web_vapid_keys k ON k.namespace = s.namespace AND k.endpoint = s.endpoint
                WHERE s.namespace = ? ORDER BY s.created_at DESC, s.id DESC
                """,
                [.text(namespace)])
            return rows.compactMap { row in
                guard row.count == 5, let endpoint = row[0].text, let p256dh = row[1].text, let auth = row[2].text,
                    case .integer(let createdAt) = row[3]
                else { return nil }
                return PushWebSubscription(
                    namespace: namespace, endpoint: endpoint, p256dh: p256dh, auth: auth, createdAt: createdAt, previousVAPIDPublicKey: row[4].text)
            }
        }
    }

    public func rememberWebSubscriptionVAPIDKey(namespace: String, endpoint: String, previousPublicKey: String?) async throws(PushDeviceStoreError) {
        _ = try await writer.run(unavailable: Self.workerUnavailable) { (db) throws(PushDeviceStoreError) in
            if let previousPublicKey {
                try db.query(
                    """
                    INSERT INTO hapi_push_web_vapid_keys (namespace, endpoint, previous_public_key, updated_at)
                    SELECT namespace, endpoint, ?, ? FROM push_subscriptions WHERE namespace = ? AND endpoint = ?
                    ON CONFLICT (namespace, endpoint) DO UPDATE SET previous_public_key = excluded.previous_public_key, updated_at = excluded.updated_at
                    """, [.text(previousPublicKey), .integer(PushDeviceRegistry.systemMilliseconds()), .text(namespace), .text(endpoint)])
            } else {
                try db.query("DELETE FROM hapi_push_web_vapid_keys WHERE namespace = ? AND endpoint = ?", [.text(namespace), .text(endpoint)])
            }
        }
    }

    public func forgetWebSubscriptionVAPIDKeys() async throws(PushDeviceStoreError) {
        _ = try await writer.run(unavailable: Self.workerUnavailable) { (db) throws(PushDeviceStoreError) in
            try db.query("DELETE FROM hapi_push_web_vapid_keys")
        }
    }
}
