/// Why a Web Push message could not be sealed or a VAPID key used. Safe to log: it never
/// carries key material, the plaintext or an endpoint.
package struct WebPushCryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    enum Code: Sendable, Hashable {
        case keyGenerationFailed, keyAgreementFailed, derivationFailed, cipherFailure, randomUnavailable
        case invalidSubscriptionKey, invalidAuthSecret, tooLarge, invalidSalt
    }

    let code: Code
    package let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package static func == (lhs: WebPushCryptoError, rhs: WebPushCryptoError) -> Bool { lhs.code == rhs.code }
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }
    package var description: String { message }

    package static let keyGenerationFailed = WebPushCryptoError(.keyGenerationFailed, "OpenSSL could not generate a P-256 key")
    package static let keyAgreementFailed = WebPushCryptoError(.keyAgreementFailed, "OpenSSL could not derive the ECDH secret with the subscription's key")
    package static let derivationFailed = WebPushCryptoError(.derivationFailed, "OpenSSL HKDF failed")
    package static let cipherFailure = WebPushCryptoError(.cipherFailure, "AES-128-GCM operation failed in OpenSSL")
    package static let randomUnavailable = WebPushCryptoError(.randomUnavailable, "secure random bytes are unavailable (OpenSSL RAND_bytes failed)")
    package static let invalidSubscriptionKey = WebPushCryptoError(
        .invalidSubscriptionKey, "the subscription's p256dh is not a 65-byte uncompressed point on P-256")
    package static let invalidAuthSecret = WebPushCryptoError(.invalidAuthSecret, "the subscription's auth secret is not 16 bytes")
    package static let tooLarge = WebPushCryptoError(
        .tooLarge, "the encrypted message would pass the 4096-byte Web Push limit (about 3993 bytes of JSON)")
    package static let invalidSalt = WebPushCryptoError(.invalidSalt, "the salt must be 16 bytes")
}
