package import PushEnvelope
import PushProviders

/// Fits a payload under a size limit without ever truncating ciphertext, ids or action
/// identifiers: the full payload, else without `notifySummary`, else the minimal
/// `HAPI / New activity` notification keeping `type`, `sessionId`, `requestId` and
/// `contractVersion`. Sizes are computed before sealing (the envelope length follows from the
/// plaintext length), never by trial encryption.
package enum PayloadFitter {
    package typealias Level = PushPayloadLevel

    /// The encrypted paths (relay, APNs): the envelope's base64 length, the relay contract's cap.
    package static let envelopeLimit = RelayProvider.maximumEnvelopeBytes
    /// Direct FCM: the data message limit, measured as the canonical JSON of the data.
    package static let fcmDataLimit = 4096

    /// The first rung whose sealed envelope fits in `envelopeLimit` bytes; nil when even the
    /// minimal notification does not.
    package static func fitEnvelope(_ payload: PushNotificationPayload, limit: Int = envelopeLimit) -> (PushNotificationPayload, Level)? {
        fit(payload) { PushEnvelopeCipher.sealedLength(plaintextCount: $0.canonicalJSON.count) <= limit }
    }

    /// The first rung whose FCM data fits in `limit` bytes.
    package static func fitFCMData(_ payload: PushNotificationPayload, limit: Int = fcmDataLimit) -> (PushNotificationPayload, Level)? {
        fit(payload) { $0.canonicalJSON.count <= limit }
    }

    static func fit(_ payload: PushNotificationPayload, fits: (PushNotificationPayload) -> Bool) -> (PushNotificationPayload, Level)? {
        if fits(payload) { return (payload, .full) }
        if payload.notifySummary != nil {
            var reduced = payload
            reduced.notifySummary = nil
            if fits(reduced) { return (reduced, .withoutSummary) }
        }
        let minimal = self.minimal(payload)
        return fits(minimal) ? (minimal, .minimal) : nil
    }

    /// The last rung: generic text, the routing ids kept.
    package static func minimal(_ payload: PushNotificationPayload) -> PushNotificationPayload {
        PushNotificationPayload(
            type: payload.type, sessionId: payload.sessionId, requestId: payload.requestId, title: "HAPI", body: "New activity",
            contractVersion: payload.contractVersion)
    }
}
