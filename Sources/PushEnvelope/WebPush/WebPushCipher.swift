import CHapiOpenSSL

/// Message encryption for Web Push (RFC 8291) in the `aes128gcm` content coding (RFC 8188):
/// what a browser's service worker decrypts. Every primitive is OpenSSL 3's (ECDH through
/// `EVP_PKEY_derive`, HKDF through its `HKDF` provider, AES-128-GCM through EVP); this type only
/// lays out the inputs and the header the RFCs specify.
package enum WebPushCipher {
    /// The record size written in the header; one record carries the whole message.
    package static let recordSize = 4096
    /// The largest body push services must accept (RFC 8030 §7.2): header 86 + ciphertext + tag.
    package static let maximumBodyByteCount = 4096
    /// salt(16) ‖ rs(4) ‖ idlen(1) ‖ keyid(65).
    package static let headerByteCount = 16 + 4 + 1 + WebPushP256Key.publicKeyByteCount
    package static let tagByteCount = 16
    /// The most plaintext that fits the interoperable body: 4096 − 86 − 16 − 1 (delimiter).
    package static let maximumPlaintextByteCount = maximumBodyByteCount - headerByteCount - tagByteCount - 1

    /// Seals `plaintext` for a subscription with a fresh ephemeral key and salt.
    package static func seal(plaintext: [UInt8], subscriptionKey: [UInt8], authSecret: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintextByteCount else { throw .tooLarge }
        let ephemeral = try WebPushP256Key.generate()
        var salt = [UInt8](repeating: 0, count: 16)
        guard salt.withUnsafeMutableBufferPointer({ RAND_bytes($0.baseAddress, 16) }) == 1 else { throw .randomUnavailable }
        return try seal(plaintext: plaintext, subscriptionKey: subscriptionKey, authSecret: authSecret, ephemeralKey: ephemeral, salt: salt)
    }

    /// Seals with a given ephemeral key and salt: RFC 8291's worked example, and nothing else,
    /// needs fixed ones (reusing either across messages would break the encryption).
    package static func seal(
        plaintext: [UInt8], subscriptionKey: [UInt8], authSecret: [UInt8], ephemeralKey: WebPushP256Key, salt: [UInt8]
    ) throws(WebPushCryptoError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintextByteCount else { throw .tooLarge }
        guard salt.count == 16 else { throw .invalidSalt }
        guard authSecret.count == 16 else { throw .invalidAuthSecret }
        guard let userAgentKey = WebPushP256Key.publicKey(subscriptionKey) else { throw .invalidSubscriptionKey }
        let sharedSecret = try ephemeralKey.sharedSecret(with: userAgentKey)
        // RFC 8291 §3.3–3.4: the auth secret salts the ECDH secret with both public keys as info.
        let keyInfo = Array("WebPush: info".utf8) + [0] + subscriptionKey + ephemeralKey.publicKey
        let inputKey = try HKDF.derive(salt: authSecret, key: sharedSecret, info: keyInfo, count: 32)
        // RFC 8188 §2.2–2.3: one extract with the message's salt, two expands.
        let pseudoRandomKey = try HKDF.extract(salt: salt, key: inputKey)
        let contentKey = try HKDF.expand(pseudoRandomKey: pseudoRandomKey, info: Array("Content-Encoding: aes128gcm".utf8) + [0], count: 16)
        let nonce = try HKDF.expand(pseudoRandomKey: pseudoRandomKey, info: Array("Content-Encoding: nonce".utf8) + [0], count: 12)

        var body = salt
        body.reserveCapacity(headerByteCount + plaintext.count + 1 + tagByteCount)
        let size = UInt32(recordSize)
        body += [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
        body.append(UInt8(WebPushP256Key.publicKeyByteCount))
        body += ephemeralKey.publicKey
        // The last (and only) record: plaintext ‖ 0x02, no padding.
        body += try AES128GCM.seal(plaintext + [2], key: contentKey, nonce: nonce)
        return body
    }
}

/// HKDF-SHA-256 (RFC 5869) through OpenSSL's `HKDF` provider.
package enum HKDF {
    /// Extract-and-expand.
    package static func derive(salt: [UInt8], key: [UInt8], info: [UInt8], count: Int) throws(WebPushCryptoError) -> [UInt8] {
        try run(mode: 0, salt: salt, key: key, info: info, count: count)
    }

    /// Extract only: the 32-byte pseudo-random key.
    package static func extract(salt: [UInt8], key: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        try run(mode: 1, salt: salt, key: key, info: nil, count: 32)
    }

    /// Expand only, from a pseudo-random key.
    package static func expand(pseudoRandomKey: [UInt8], info: [UInt8], count: Int) throws(WebPushCryptoError) -> [UInt8] {
        try run(mode: 2, salt: nil, key: pseudoRandomKey, info: info, count: count)
    }

    /// `mode`: OpenSSL's EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND (0), EXTRACT_ONLY (1), EXPAND_ONLY (2).
    private static func run(mode: Int32, salt: [UInt8]?, key: [UInt8], info: [UInt8]?, count: Int) throws(WebPushCryptoError) -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "HKDF", nil) else { throw .derivationFailed }
        defer { EVP_PKEY_CTX_free(context) }
        var ok = EVP_PKEY_derive_init(context) == 1 && EVP_PKEY_CTX_set_hkdf_mode(context, mode) == 1
            && EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256()) == 1
            && key.withUnsafeBufferPointer { EVP_PKEY_CTX_set1_hkdf_key(context, $0.baseAddress, Int32($0.count)) } == 1
        if ok, let salt {
            ok = salt.withUnsafeBufferPointer { EVP_PKEY_CTX_set1_hkdf_salt(context, $0.baseAddress, Int32($0.count)) } == 1
        }
        if ok, let info {
            ok = info.withUnsafeBufferPointer { EVP_PKEY_CTX_add1_hkdf_info(context, $0.baseAddress, Int32($0.count)) } == 1
        }
        var length = count
        var out = [UInt8](repeating: 0, count: count)
        if ok {
            ok = out.withUnsafeMutableBufferPointer { EVP_PKEY_derive(context, $0.baseAddress, &length) } == 1 && length == count
        }
        guard ok else {
            ERR_clear_error()
            throw .derivationFailed
        }
        return out
    }
}

/// AES-128-GCM sealing for RFC 8188 records: `ciphertext ‖ tag`, no AAD.
enum AES128GCM {
    /// Fetched once: a fetched `EVP_CIPHER` is immutable and safe to share between threads.
    private struct FetchedCipher: @unchecked Sendable {
        let pointer: OpaquePointer?
    }
    private static let fetched = FetchedCipher(pointer: EVP_CIPHER_fetch(nil, "AES-128-GCM", nil) ?? EVP_aes_128_gcm())

    static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        guard key.count == 16, nonce.count == 12, let context = EVP_CIPHER_CTX_new() else { throw .cipherFailure }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        let ok = output.withUnsafeMutableBufferPointer { out -> Bool in
            guard let base = out.baseAddress else { return false }
            var length: Int32 = 0
            var finalLength: Int32 = 0
            return EVP_EncryptInit_ex(context, fetched.pointer, nil, key, nonce) == 1
                && EVP_EncryptUpdate(context, base, &length, plaintext, Int32(plaintext.count)) == 1 && Int(length) == plaintext.count
                && EVP_EncryptFinal_ex(context, base + plaintext.count, &finalLength) == 1 && finalLength == 0
                && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, base + plaintext.count) == 1
        }
        guard ok else {
            ERR_clear_error()
            throw .cipherFailure
        }
        return output
    }
}
