import PushEnvelope
import PushSync

/// Subscriptions' keys parsed once, not once per message: a dispatch to the same subscriptions
/// seals for them again and again, and parsing a `p256dh` into an OpenSSL key (and checking it
/// is on the curve) costs a tenth of a seal. Keyed by the keys as stored; bounded (emptied when
/// full) so a hub with churning subscriptions never grows it.
final class WebPushRecipientCache: Sendable {
    /// Subscriptions remembered at most; a parsed key is a few hundred bytes.
    static let limit = 4096

    private struct Key: Hashable {
        let p256dh: String
        let auth: String
    }
    private let recipients = Locked<[Key: WebPushRecipient]>([:])

    /// The parsed keys, or nil when they are not a valid `p256dh` and auth secret (never cached).
    func recipient(p256dh: String, auth: String) -> WebPushRecipient? {
        let key = Key(p256dh: p256dh, auth: auth)
        if let known = recipients.withLock({ $0[key] }) { return known }
        guard let parsed = try? WebPushRecipient(p256dh: p256dh, auth: auth) else { return nil }
        recipients.withLock { table in
            if table.count >= Self.limit { table.removeAll(keepingCapacity: true) }
            table[key] = parsed
        }
        return parsed
    }

    var count: Int { recipients.withLock { $0.count } }
}
