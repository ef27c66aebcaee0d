import PushEnvelope

/// The store's SQL for one table, prepared once on each connection.
struct PostgresStatements: Sendable {
    static let evictName = "hapi_push_evict"
    static let upsertName = "hapi_push_upsert"
    static let unregisterName = "hapi_push_unregister"
    static let pruneName = "hapi_push_prune"
    static let listName = "hapi_push_list"

    /// Whether the table fills `id` itself (identity, serial or a default); otherwise the
    /// store supplies a random UUID string, as the JavaScript hub does for text ids.
    let idIsGenerated: Bool
    let evict: String
    let upsert: String
    let unregister: String
    let prune: String
    let list: String

    init(table: String, idIsGenerated: Bool) {
        let t = "\"\(table)\""
        self.idIsGenerated = idIsGenerated
        let columns = "namespace, token, platform, device_id, push_key, created_at, updated_at"
        let insert =
            idIsGenerated
            ? "INSERT INTO \(t) (\(columns)) VALUES ($1, $2, $3, $4, $5, $6, $6)"
            : "INSERT INTO \(t) (id, \(columns)) VALUES ($7, $1, $2, $3, $4, $5, $6, $6)"
        // In one transaction: evict every other row holding the token, then insert or update the
        // (namespace, device_id, platform) row. The unique index on token refuses a row that a
        // concurrent registration committed in the meantime (23505); the store then runs the
        // transaction again, whose eviction now sees and removes that row.
        evict = "DELETE FROM \(t) WHERE token = $1 AND NOT (namespace = $2 AND device_id = $3 AND platform = $4)"
        upsert =
            insert
            + " ON CONFLICT (namespace, device_id, platform) DO UPDATE SET token = EXCLUDED.token, push_key = EXCLUDED.push_key,"
            + " updated_at = EXCLUDED.updated_at RETURNING created_at"
        unregister = "DELETE FROM \(t) WHERE namespace = $1 AND (token = $2 OR (platform = 'ios' AND token = $3))"
        prune = "DELETE FROM \(t) WHERE namespace = $1 AND token = $2 AND updated_at <= $3::bigint"
        list =
            "SELECT device_id, platform, token, push_key, created_at, updated_at FROM \(t) WHERE namespace = $1"
            + " ORDER BY updated_at DESC, id DESC"
    }

    func prepare(on connection: PostgresConnection) throws(PostgresFailure) {
        guard connection.preparedNames.count < 5 else { return }
        try connection.prepare(Self.evictName, evict)
        try connection.prepare(Self.upsertName, upsert)
        try connection.prepare(Self.unregisterName, unregister)
        try connection.prepare(Self.pruneName, prune)
        try connection.prepare(Self.listName, list)
    }

    static func isPlainIdentifier(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 63 else { return false }
        let isLetter = { (c: UInt8) in (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F }
        return isLetter(first) && bytes.allSatisfy { isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) }
    }

    /// A random UUID-shaped row id.
    static func newRowId() -> String {
        var bytes = (try? SecureRandom.bytes(16)) ?? (0..<16).map { _ in UInt8.random(in: 0...255) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = Array(Digest.hex(bytes))
        return String(hex[0..<8]) + "-" + String(hex[8..<12]) + "-" + String(hex[12..<16]) + "-" + String(hex[16..<20]) + "-"
            + String(hex[20..<32])
    }
}
