/// The device side of the envelope, as the iOS Notification Service Extension and the Android
/// FCM service do it: a present encrypted marker with an unknown version, a missing key, a
/// missing envelope, a failed tag or malformed JSON is dropped (a typed error), never shown as
/// plaintext. The hub does not need this to send; it exists so tests, the demo and
/// `hapi-push envelope open` can prove what a device would see.
public enum ReceivedPush {
    /// Decodes what arrived as `hapi.v`/`hapi.e` (APNs) or `hapi_v`/`hapi_e` (FCM data).
    public static func decode(version: String?, envelope: String?, key: PushKey?) throws(EnvelopeError) -> NotificationPayload {
        guard version == String(PushEnvelope.version) else { throw EnvelopeError.unsupportedVersion }
        guard let envelope, !envelope.isEmpty else { throw EnvelopeError.missingEnvelope }
        guard let key else { throw EnvelopeError.missingKey }
        let plaintext = try PushEnvelope.open(envelope, key: key)
        let value: JSONValue
        do {
            value = try JSONParser.parse(plaintext)
        } catch {
            throw EnvelopeError.malformedPayload
        }
        return try NotificationPayload(jsonObject: value)
    }
}
