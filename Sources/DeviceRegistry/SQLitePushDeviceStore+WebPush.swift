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

    public func addWebSubscription(namespace: String, endpoint: String, p256dh: String, auth: String, now: Int64) async throws(PushDeviceStoreError) {
        _ = try await writer.run(unavailable: Self.workerUnavailable) { (db) throws(PushDeviceStoreError) in
            try db.query(
                """
                INSERT INTO push_subscriptions (namespace, endpoint, p256dh, auth, created_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (namespace, endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth, created_at = excluded.created_at
                """, [.text(namespace), .text(endpoint), .text(p256dh), .text(auth), .integer(now)])
        }
    }

    @discardableResult
    public func removeWebSubscription(namespace: String, endpoint: String) async throws(PushDeviceStoreError) -> Bool {
        try await writer.run(unavailable: Self.workerUnavailable) { (db) throws(PushDeviceStoreError) -> Bool in
            try db.query("DELETE FROM push_subscriptions WHERE namespace = ? AND endpoint = ?", [.text(namespace), .text(endpoint)])
            return db.changes > 0
        }
    }

    public func webSubscriptions(namespace: String) async throws(PushDeviceStoreError) -> [PushWebSubscription] {
        try await reader.run(unavailable: Self.workerUnavailable) { (db) throws(PushDeviceStoreError) -> [PushWebSubscription] in
            let rows = try db.query(
                "SELECT endpoint, p256dh, auth, created_at FROM push_subscriptions WHERE namespace = ? ORDER BY created_at DESC, id DESC",
                [.text(namespace)])
            return rows.compactMap { row in
                guard row.count == 4, let endpoint = row[0].text, let p256dh = row[1].text, let auth = row[2].text,
                    case .integer(let createdAt) = row[3]
                else { return nil }
                return PushWebSubscription(namespace: namespace, endpoint: endpoint, p256dh: p256dh, auth: auth, createdAt: createdAt)
            }
        }
    }
}
