/// The device side of the envelope, as the iOS Notification Service Extension and the Android
/// FCM service do it: a present encrypted marker with an unknown version, a missing key, a
/// missing envelope, a failed tag or malformed JSON is dropped (a typed error), never shown as
/// plaintext. The hub does not need this to send; it exists so tests, the demo and
/// `hapi-push envelope open` can prove what a device would see.
public enum ReceivedPush {
    /// Decodes what arrived as `hapi.v`/`hapi.e` (APNs) or `hapi_v`/`hapi_e` (FCM data).
    public static func decode(version: String?, envelope: String?, key: PushKey?) throws(PushEnvelopeError) -> PushNotificationPayload {
        guard version == String(PushEnvelopeCipher.version) else { throw PushEnvelopeError.unsupportedVersion }
        guard let envelope, !envelope.isEmpty else { throw PushEnvelopeError.missingEnvelope }
        guard let key else { throw PushEnvelopeError.missingKey }
        let plaintext = try PushEnvelopeCipher.open(envelope, key: key)
        let value: JSONValue
        do {
            value = try JSONParser.parse(plaintext)
        } catch {
            throw PushEnvelopeError.malformedPayload
        }
        return try PushNotificationPayload(jsonObject: value)
    }
}
