package import PushEnvelope

/// One notification for one device, as a transport needs it. The dispatcher builds these:
/// it has already chosen the transport, sealed the envelope within the size cap (encrypted
/// paths) or fitted the payload (direct FCM).
package struct PushDelivery: Sendable, CustomStringConvertible, CustomReflectable {
    /// The kind of device, as far as the wire format cares.
    package enum Target: String, Sendable, Hashable {
        /// An iPhone (APNs token, hex).
        case ios
        /// An Android phone (FCM token).
        case androidPhone = "phone"
        /// A Wear OS watch (FCM token; direct FCM only).
        case wear
    }

    /// What is carried: an envelope for the relay and APNs, the plaintext payload for direct FCM.
    package enum Content: Sendable {
        case envelope(String)
        case plaintext(PushNotificationPayload)
    }

    package var target: Target
    /// The device token. A secret: logs carry `tokenHash`.
    package var token: String
    package var content: Content
    /// `<type>-<sessionId>`: newer notifications of a session and type replace older ones on iOS.
    package var collapseId: String
    package var priority: PushPriority

    package init(target: Target, token: String, content: Content, collapseId: String, priority: PushPriority = .high) {
        self.target = target
        self.token = token
        self.content = content
        self.collapseId = collapseId
        self.priority = priority
    }

    /// The first 12 hex digits of the token's SHA-256, for logs.
    package var tokenHash: String { TokenFingerprint.of(token) }

    /// Shows the token fingerprint and the kind of content, never the token, the envelope or
    /// the plaintext.
    package var description: String {
        let kind: String
        switch content {
        case .envelope(let envelope): kind = "envelope(\(envelope.utf8.count) bytes)"
        case .plaintext(let payload): kind = "plaintext(\(payload.type))"
        }
        return "PushDelivery(target: \(target.rawValue), token: \(tokenHash)…, content: \(kind), collapseId: \(collapseId), priority: \(priority.rawValue))"
    }

    package var customMirror: Mirror { Mirror(self, children: ["description": description], displayStyle: .struct) }
}

/// Delivery priority: 10 (deliver now, wakes the device) or 5 (power-friendly).
package enum PushPriority: Int, Sendable, Hashable {
    case high = 10
    case normal = 5
}
