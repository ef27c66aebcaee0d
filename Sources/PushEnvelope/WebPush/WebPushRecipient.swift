/// A subscription's keys as a seal needs them: the browser's `p256dh` parsed into an OpenSSL key
/// (and checked to be a point on P-256) once, not once per message, and its 16-byte auth secret.
/// Public material only; still, `description` shows neither.
package struct WebPushRecipient: Sendable, CustomStringConvertible {
    package let key: WebPushP256Key
    package let authSecret: [UInt8]

    /// From the raw 65-byte point and 16-byte secret.
    package init(subscriptionKey: [UInt8], authSecret: [UInt8]) throws(WebPushCryptoError) {
        guard authSecret.count == 16 else { throw .invalidAuthSecret }
        guard let key = WebPushP256Key.publicKey(subscriptionKey) else { throw .invalidSubscriptionKey }
        self.key = key
        self.authSecret = authSecret
    }

    /// From the subscription's `keys` as the browser gave them (URL-safe base64).
    package init(p256dh: String, auth: String) throws(WebPushCryptoError) {
        guard let point = Base64.urlDecode(p256dh) else { throw .invalidSubscriptionKey }
        guard let secret = Base64.urlDecode(auth) else { throw .invalidAuthSecret }
        try self.init(subscriptionKey: point, authSecret: secret)
    }

    package var description: String { "WebPushRecipient(keys redacted)" }
}
