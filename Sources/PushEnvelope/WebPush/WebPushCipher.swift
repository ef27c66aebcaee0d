import CHapiOpenSSL

/// Message encryption for Web Push (RFC 8291) in the `aes128gcm` content coding (RFC 8188):
/// what a browser's service worker decrypts. Every primitive is OpenSSL 3's (P-256 key
/// generation and ECDH through `EVP_PKEY`, HMAC-SHA-256 through `EVP_MAC`, AES-128-GCM through
/// EVP); this type lays out the inputs and the header the RFCs specify.
///
/// What a message costs is what RFC 8291 makes unavoidable: a fresh P-256 key, one ECDH, five
/// HMACs and one AES-GCM record. Everything else is made once (`WebPushSealingContext`: the
/// contexts and fetched algorithms; `WebPushRecipient`: the browser's key, parsed and checked
/// once per subscription), and the body is the one allocation.
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
        return try seal(plaintext: plaintext, for: WebPushRecipient(subscriptionKey: subscriptionKey, authSecret: authSecret))
    }

    /// Seals `plaintext` for a parsed subscription with a fresh ephemeral key and salt: the
    /// dispatch's path, which parses each subscription's key once.
    package static func seal(plaintext: [UInt8], for recipient: WebPushRecipient) throws(WebPushCryptoError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintextByteCount else { throw .tooLarge }
        let result = WebPushSealingContext.withContext { context -> Result<[UInt8], WebPushCryptoError> in
            guard let ephemeral = context.generateKey() else { return .failure(.keyGenerationFailed) }
            defer { EVP_PKEY_free(ephemeral) }
            return body(plaintext: plaintext, recipient: recipient, ephemeral: ephemeral, context: context) { header in
                guard RAND_bytes(header, 16) == 1 else { return .randomUnavailable }
                var length = 0
                guard EVP_PKEY_get_octet_string_param(ephemeral, "encoded-pub-key", header + 21, WebPushP256Key.publicKeyByteCount, &length) == 1,
                    length == WebPushP256Key.publicKeyByteCount
                else { return .keyGenerationFailed }
                return nil
            }
        }
        return try (result ?? .failure(.keyGenerationFailed)).get()
    }

    /// Seals with a given ephemeral key and salt: RFC 8291's worked example, and nothing else,
    /// needs fixed ones (reusing either across messages would break the encryption).
    package static func seal(
        plaintext: [UInt8], subscriptionKey: [UInt8], authSecret: [UInt8], ephemeralKey: WebPushP256Key, salt: [UInt8]
    ) throws(WebPushCryptoError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintextByteCount else { throw .tooLarge }
        guard salt.count == 16 else { throw .invalidSalt }
        guard ephemeralKey.hasPrivateKey else { throw .keyAgreementFailed }
        let recipient = try WebPushRecipient(subscriptionKey: subscriptionKey, authSecret: authSecret)
        let result = WebPushSealingContext.withContext { context -> Result<[UInt8], WebPushCryptoError> in
            body(plaintext: plaintext, recipient: recipient, ephemeral: ephemeralKey.evpKey, context: context) { header in
                header.update(from: salt, count: 16)
                (header + 21).update(from: ephemeralKey.publicKey, count: WebPushP256Key.publicKeyByteCount)
                return nil
            }
        }
        return try (result ?? .failure(.keyGenerationFailed)).get()
    }

    private static let keyInfoPrefix: StaticString = "WebPush: info\0"
    /// HKDF-Expand's info for one block: the label, its NUL, and the block counter 0x01.
    private static let contentKeyInfo: StaticString = "Content-Encoding: aes128gcm\0\u{01}"
    private static let nonceInfo: StaticString = "Content-Encoding: nonce\0\u{01}"

    /// The whole body in one allocation: `writeSaltAndKey` fills the salt (bytes 0..<16) and the
    /// ephemeral public point (21..<86); the rest follows RFC 8291 §3.3–3.4 and RFC 8188 §2.
    /// HKDF (RFC 5869) for outputs of at most one SHA-256 block is two HMACs, extract then
    /// expand with `info ‖ 0x01`; five HMACs on one reused context replace four `EVP_KDF`
    /// derivations, each of which rebuilds its HMAC and fetches SHA-256 again.
    private static func body(
        plaintext: [UInt8], recipient: WebPushRecipient, ephemeral: OpaquePointer, context: WebPushSealingContext,
        writeSaltAndKey: (UnsafeMutablePointer<UInt8>) -> WebPushCryptoError?
    ) -> Result<[UInt8], WebPushCryptoError> {
        var failure: WebPushCryptoError?
        let count = headerByteCount + plaintext.count + 1 + tagByteCount
        let body = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = 0
            guard let out = buffer.baseAddress else {
                failure = .cipherFailure
                return
            }
            if let error = writeSaltAndKey(out) {
                failure = error
                return
            }
            let size = UInt32(recordSize)
            out[16] = UInt8(size >> 24)
            out[17] = UInt8(size >> 16 & 0xFF)
            out[18] = UInt8(size >> 8 & 0xFF)
            out[19] = UInt8(size & 0xFF)
            out[20] = UInt8(WebPushP256Key.publicKeyByteCount)
            failure = derive(plaintext: plaintext, recipient: recipient, ephemeral: ephemeral, context: context, body: out)
            if failure == nil { initialized = count }
        }
        if let failure { return .failure(failure) }
        return .success(body)
    }

    /// ECDH, the key schedule and the record, into `body` whose header is written.
    private static func derive(
        plaintext: [UInt8], recipient: WebPushRecipient, ephemeral: OpaquePointer, context: WebPushSealingContext, body: UnsafeMutablePointer<UInt8>
    ) -> WebPushCryptoError? {
        // Scratch: ecdh secret, PRK_key, IKM, PRK, CEK block, nonce block (32 bytes each), then the
        // key info "WebPush: info\0" ‖ ua_public ‖ as_public ‖ 0x01. Wiped before it is freed.
        let infoStart = 192
        let infoCount = keyInfoPrefix.utf8CodeUnitCount + 2 * WebPushP256Key.publicKeyByteCount + 1
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: infoStart + infoCount) { scratch -> WebPushCryptoError? in
            guard let base = scratch.baseAddress else { return .derivationFailed }
            defer { OPENSSL_cleanse(base, infoStart + infoCount) }
            let secret = base, keyPRK = base + 32, inputKey = base + 64, prk = base + 96, contentKey = base + 128, nonce = base + 160
            guard let exchange = EVP_PKEY_CTX_new_from_pkey(nil, ephemeral, nil) else { return .keyAgreementFailed }
            defer { EVP_PKEY_CTX_free(exchange) }
            var secretLength = 32
            // The recipient's key was checked on the curve when it was parsed (WebPushP256Key): no
            // second check here, which on OpenSSL 3 is a full scalar multiplication.
            guard EVP_PKEY_derive_init(exchange) == 1, EVP_PKEY_derive_set_peer_ex(exchange, recipient.key.evpKey, 0) == 1,
                EVP_PKEY_derive(exchange, secret, &secretLength) == 1, secretLength == 32
            else {
                ERR_clear_error()
                return .keyAgreementFailed
            }
            let info = base + infoStart
            info.update(from: keyInfoPrefix.utf8Start, count: keyInfoPrefix.utf8CodeUnitCount)
            var cursor = info + keyInfoPrefix.utf8CodeUnitCount
            cursor.update(from: recipient.key.publicKey, count: WebPushP256Key.publicKeyByteCount)
            cursor += WebPushP256Key.publicKeyByteCount
            cursor.update(from: body + 21, count: WebPushP256Key.publicKeyByteCount)
            cursor[WebPushP256Key.publicKeyByteCount] = 1
            let derived = recipient.authSecret.withUnsafeBytes { auth in
                // IKM = HKDF(auth, ecdh_secret, key_info, 32)
                context.hmac(key: auth, UnsafeRawBufferPointer(start: secret, count: 32), into: keyPRK)
                    && context.hmac(key: UnsafeRawBufferPointer(start: keyPRK, count: 32), UnsafeRawBufferPointer(start: info, count: infoCount), into: inputKey)
                    // PRK = HKDF-Extract(salt, IKM); CEK and NONCE expanded from it.
                    && context.hmac(key: UnsafeRawBufferPointer(start: body, count: 16), UnsafeRawBufferPointer(start: inputKey, count: 32), into: prk)
                    && context.hmac(
                        key: UnsafeRawBufferPointer(start: prk, count: 32),
                        UnsafeRawBufferPointer(start: contentKeyInfo.utf8Start, count: contentKeyInfo.utf8CodeUnitCount), into: contentKey)
                    && context.hmac(
                        key: UnsafeRawBufferPointer(start: prk, count: 32), UnsafeRawBufferPointer(start: nonceInfo.utf8Start, count: nonceInfo.utf8CodeUnitCount),
                        into: nonce)
            }
            guard derived else { return .derivationFailed }
            // CEK is the first 16 bytes of its block, NONCE the first 12 of its own.
            let sealed = plaintext.withUnsafeBytes { context.sealRecord($0, key: contentKey, nonce: nonce, into: body + headerByteCount) }
            return sealed ? nil : .cipherFailure
        }
    }
}
