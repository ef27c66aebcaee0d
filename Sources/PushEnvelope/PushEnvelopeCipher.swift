import CHapiOpenSSL

/// The encrypted envelope the hub sends through the relay, APNs and FCM:
/// `base64(nonce(12) ‖ AES-256-GCM ciphertext ‖ tag(16))` under the device's push key, with
/// AAD `hapi-push-v1`. Only the hub and the paired device can read it.
public enum PushEnvelopeCipher {
    /// The envelope format version carried beside it (`hapi.v` on APNs, `hapi_v` on FCM).
    public static let version = 1
    /// Associated data bound into every tag; a message sealed for another purpose will not open.
    public static let associatedData: [UInt8] = Array("hapi-push-v1".utf8)
    /// The largest envelope the relay accepts, in base64 bytes as transmitted.
    public static let maximumEnvelopeLength = 3200
    /// Nonce and tag bytes added to every plaintext.
    public static let overheadByteCount = AESGCM.nonceByteCount + AESGCM.tagByteCount

    /// The base64 length of the envelope for a plaintext of `plaintextCount` bytes:
    /// 4·⌈(n + 28)/3⌉. Lets callers check the 3200-byte cap before spending a seal.
    public static func sealedLength(plaintextCount: Int) -> Int {
        Base64.encodedLength(plaintextCount + overheadByteCount)
    }

    /// The largest plaintext whose envelope fits in `limit` base64 bytes.
    public static func maximumPlaintextLength(envelopeLimit limit: Int = maximumEnvelopeLength) -> Int {
        limit / 4 * 3 - overheadByteCount
    }

    /// Seals `plaintext` under `key` with a fresh random nonce. Call once per message and
    /// device: a nonce is never reused.
    ///
    /// One allocation besides OpenSSL's context: nonce, ciphertext and tag are written into a
    /// scratch buffer and base64-encoded straight into the returned string's storage.
    public static func seal(_ plaintext: [UInt8], key: PushKey) throws(PushEnvelopeError) -> String {
        let sealedCount = AESGCM.nonceByteCount + plaintext.count + AESGCM.tagByteCount
        let sealed: String? = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: sealedCount) { scratch in
            guard let base = scratch.baseAddress, RAND_bytes(base, Int32(AESGCM.nonceByteCount)) == 1,
                AESGCM.seal(plaintext: plaintext, key: key.bytes, aad: associatedData, into: base)
            else { return nil }
            return Base64.encode(UnsafeBufferPointer(start: base, count: sealedCount))
        }
        guard let sealed else { throw PushEnvelopeError.cipherFailure }
        return sealed
    }

    /// Seals with a caller-chosen nonce. Only for test vectors: reusing a nonce under one key
    /// breaks AES-GCM's confidentiality and authenticity. Production code uses `seal(_:key:)`.
    package static func seal(_ plaintext: [UInt8], key: PushKey, testVectorNonce nonce: [UInt8]) throws(PushEnvelopeError) -> String {
        try sealBytes(plaintext, key: key, nonce: nonce)
    }

    private static func sealBytes(_ plaintext: [UInt8], key: PushKey, nonce: [UInt8]) throws(PushEnvelopeError) -> String {
        let sealed = try AESGCM.seal(plaintext: plaintext, key: key.bytes, nonce: nonce, aad: associatedData)
        return Base64.encode(sealed)
    }

    /// Opens an envelope as the device does: strict base64, at least 28 bytes, and the tag
    /// verified by OpenSSL before any plaintext is returned.
    public static func open(_ envelope: String, key: PushKey) throws(PushEnvelopeError) -> [UInt8] {
        let sealed: [UInt8]
        do {
            sealed = try Base64.decode(envelope)
        } catch {
            throw PushEnvelopeError.invalidBase64
        }
        return try AESGCM.open(sealed: sealed, key: key.bytes, aad: associatedData)
    }
}
