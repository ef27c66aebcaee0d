public import DeviceRegistry
import PushSync

/// Web Push subscriptions beside the registrations, in `push_subscriptions` (the JavaScript
/// hub's table in PostgreSQL's types), shared by every hub process.
extension PostgresPushDeviceStore: PushWebSubscriptionStore {
    public func addWebSubscription(namespace: String, endpoint: String, p256dh: String, auth: String, now: Int64) async throws(PushDeviceStoreError) {
        let statements = self.statements
        try await workers.run(unavailable: Self.workerUnavailable(configuration)) { (session) throws(PushDeviceStoreError) in
            try session.transaction(statements) { (db) throws(PostgresFailure) in
                _ = try db.execute(
                    """
                    INSERT INTO push_subscriptions (namespace, endpoint, p256dh, auth, created_at) VALUES ($1, $2, $3, $4, $5)
                    ON CONFLICT (namespace, endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth, created_at = excluded.created_at
                    """, [namespace, endpoint, p256dh, auth, String(now)])
                _ = try db.execute("DELETE FROM hapi_push_web_vapid_keys WHERE namespace = $1 AND endpoint = $2", [namespace, endpoint])
            }
        }
    }

    @discardableResult
    public func removeWebSubscription(namespace: String, endpoint: String) async throws(PushDeviceStoreError) -> Bool {
        let statements = self.statements
        return try await workers.run(unavailable: Self.workerUnavailable(configuration)) { (session) throws(PushDeviceStoreError) -> Bool in
            try session.transaction(statements) { (db) throws(PostgresFailure) -> Bool in
                let removed = try db.execute("DELETE FROM push_subscriptions WHERE namespace = $1 AND endpoint = $2", [namespace, endpoint]).changedRows > 0
                _ = try db.execute("DELETE FROM hapi_push_web_vapid_keys WHERE namespace = $1 AND endpoint = $2", [namespace, endpoint])
                return removed
            }
        }
    }

    public func webSubscriptions(namespace: String) async throws(PushDeviceStoreError) -> [PushWebSubscription] {
        let statements = self.statements
        return try await workers.run(unavailable: Self.workerUnavailable(configuration)) { (session) throws(PushDeviceStoreError) -> [PushWebSubscription] in
            try session.read(statements) { (db) throws(PostgresFailure) -> [PushWebSubscription] in
                let result = try db.execute(
                    """
                    SELECT s.endpoint, s.p256dh, s.auth, s.created_at, k.previous_public_key FROM push_subscriptions s
                    LEFT JOIN hapi_push_web_vapid_keys k ON k.namespace = s.namespace AND k.endpoint = s.endpoint
                    WHERE s.namespace = $1 ORDER BY s.created_at DESC, s.id DESC
                    """, [namespace])
                return (0..<result.rowCount).compactMap { row in
                    guard let endpoint = result.text(row, 0), let p256dh = result.text(row, 1), let auth = result.text(row, 2) else { return nil }
                    return PushWebSubscription(
                        namespace: namespace, endpoint: endpoint, p256dh: p256dh, auth: auth, createdAt: result.int64(row, 3) ?? 0,
                        previousVAPIDPublicKey: result.text(row, 4))
                }
            }
        }
    }

    public func rememberWebSubscriptionVAPIDKey(namespace: String, endpoint: String, previousPublicKey: String?) async throws(PushDeviceStoreError) {
        let statements = self.statements
        try await workers.run(unavailable: Self.workerUnavailable(configuration)) { (session) throws(PushDeviceStoreError) in
            try session.transaction(statements) { (db) throws(PostgresFailure) in
                if let previousPublicKey {
                    _ = try db.execute(
                        """
                        INSERT INTO hapi_push_web_vapid_keys (namespace, endpoint, previous_public_key, updated_at)
                        SELECT namespace, endpoint, $3, $4 FROM push_subscriptions WHERE namespace = $1 AND endpoint = $2
                        ON CONFLICT (namespace, endpoint) DO UPDATE SET previous_public_key = excluded.previous_public_key, updated_at = excluded.updated_at
                        """, [namespace, endpoint, previousPublicKey, String(PushDeviceRegistry.systemMilliseconds())])
                } else {
                    _ = try db.execute("DELETE FROM hapi_push_web_vapid_keys WHERE namespace = $1 AND endpoint = $2", [namespace, endpoint])
                }
            }
        }
    }

    public func forgetWebSubscriptionVAPIDKeys() async throws(PushDeviceStoreError) {
        let statements = self.statements
        try await workers.run(unavailable: Self.workerUnavailable(configuration)) { (session) throws(PushDeviceStoreError) in
            try session.transaction(statements) { (db) throws(PostgresFailure) in
                _ = try db.execute("DELETE FROM hapi_push_web_vapid_keys")
            }
        }
    }
}
