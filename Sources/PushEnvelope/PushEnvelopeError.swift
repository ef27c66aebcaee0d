/// Why sealing or opening an envelope failed. Safe to log: it never carries key material,
/// plaintext or the envelope itself.
///
/// A struct over a private code (rather than a public enum) so new cases can be added without
/// breaking callers; compare against the static members.
public struct PushEnvelopeError: Error, Sendable, Hashable, CustomStringConvertible {
    enum Code: Sendable, Hashable {
        case invalidBase64
        case tooShort
        case authenticationFailed
        case cipherFailure
        case randomUnavailable
        case unsupportedVersion
        case missingEnvelope
        case missingKey
        case malformedPayload
        case invalidNonce
    }

    let code: Code
    /// What went wrong and what to do, in one sentence.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func == (lhs: PushEnvelopeError, rhs: PushEnvelopeError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { message }

    /// The envelope is not strict standard base64.
    public static let invalidBase64 = PushEnvelopeError(.invalidBase64, "envelope is not valid base64 (standard alphabet, padded, no whitespace)")
    /// The envelope decodes to fewer than 28 bytes (12-byte nonce + 16-byte tag): truncated.
    public static let tooShort = PushEnvelopeError(.tooShort, "envelope is shorter than nonce + tag (28 bytes): it was truncated")
    /// The GCM tag did not verify. AES-GCM cannot tell a wrong key from altered AAD, a flipped
    /// bit or a cut-off tail: all of them are this error, and no plaintext is returned.
    public static let authenticationFailed = PushEnvelopeError(.authenticationFailed, "envelope failed authentication: wrong push key, or the envelope or its AAD was altered")
    /// OpenSSL refused an AES-GCM operation that should not fail.
    public static let cipherFailure = PushEnvelopeError(.cipherFailure, "AES-256-GCM operation failed in OpenSSL")
    /// The system random generator failed; nothing was sealed.
    public static let randomUnavailable = PushEnvelopeError(.randomUnavailable, "secure random bytes are unavailable (OpenSSL RAND_bytes failed); nothing was sealed")
    /// A device received an envelope version it does not know: drop it.
    public static let unsupportedVersion = PushEnvelopeError(.unsupportedVersion, "unknown envelope version: the notification is dropped")
    /// A device received an encrypted marker without an envelope.
    public static let missingEnvelope = PushEnvelopeError(.missingEnvelope, "encrypted notification has no envelope: the notification is dropped")
    /// A device has no push key to open the envelope with.
    public static let missingKey = PushEnvelopeError(.missingKey, "no push key on this device: the notification is dropped")
    /// The envelope opened, but its plaintext is not a valid notification payload.
    public static let malformedPayload = PushEnvelopeError(.malformedPayload, "envelope plaintext is not a valid notification payload: the notification is dropped")
    /// A fixed nonce for a test vector was not 12 bytes.
    public static let invalidNonce = PushEnvelopeError(.invalidNonce, "nonce must be exactly 12 bytes (24 hex digits)")
}
