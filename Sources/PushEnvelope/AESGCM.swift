import CHapiOpenSSL

/// AES-256-GCM through OpenSSL's EVP interface. One context per call, owned by a class that
/// frees it in `deinit`, so no exit path leaks it.
enum AESGCM {
    static let nonceByteCount = 12
    static let tagByteCount = 16

    private final class Context {
        let pointer: OpaquePointer
        init() throws(EnvelopeError) {
            guard let pointer = EVP_CIPHER_CTX_new() else { throw EnvelopeError.cipherFailure }
            self.pointer = pointer
        }
        deinit { EVP_CIPHER_CTX_free(pointer) }
    }

    /// Returns `nonce ‖ ciphertext ‖ tag`.
    static func seal(plaintext: [UInt8], key: [UInt8], nonce: [UInt8], aad: [UInt8]) throws(EnvelopeError) -> [UInt8] {
        guard key.count == 32 else { throw EnvelopeError.cipherFailure }
        guard nonce.count == nonceByteCount else { throw EnvelopeError.invalidNonce }
        let context = try Context()
        let ctx = context.pointer
        guard EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceByteCount), nil) == 1,
            EVP_EncryptInit_ex(ctx, nil, nil, key, nonce) == 1
        else { throw EnvelopeError.cipherFailure }

        var length: Int32 = 0
        if !aad.isEmpty {
            guard EVP_EncryptUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1 else { throw EnvelopeError.cipherFailure }
        }
        var output = [UInt8](repeating: 0, count: nonceByteCount + plaintext.count + tagByteCount)
        for i in 0..<nonceByteCount { output[i] = nonce[i] }
        let ok: Bool = output.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return false }
            let cipherStart = base + nonceByteCount
            var written: Int32 = 0
            if !plaintext.isEmpty {
                guard EVP_EncryptUpdate(ctx, cipherStart, &written, plaintext, Int32(plaintext.count)) == 1,
                    Int(written) == plaintext.count
                else { return false }
            }
            var finalLength: Int32 = 0
            guard EVP_EncryptFinal_ex(ctx, cipherStart + plaintext.count, &finalLength) == 1, finalLength == 0 else { return false }
            return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), cipherStart + plaintext.count) == 1
        }
        guard ok else { throw EnvelopeError.cipherFailure }
        return output
    }

    /// Verifies the tag and returns the plaintext of `nonce ‖ ciphertext ‖ tag`. No plaintext
    /// leaves this function unless OpenSSL verified the tag.
    static func open(sealed: [UInt8], key: [UInt8], aad: [UInt8]) throws(EnvelopeError) -> [UInt8] {
        guard sealed.count >= nonceByteCount + tagByteCount else { throw EnvelopeError.tooShort }
        guard key.count == 32 else { throw EnvelopeError.cipherFailure }
        let cipherCount = sealed.count - nonceByteCount - tagByteCount
        let nonce = Array(sealed[0..<nonceByteCount])
        var tag = Array(sealed[(sealed.count - tagByteCount)...])
        let context = try Context()
        let ctx = context.pointer
        guard EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceByteCount), nil) == 1,
            EVP_DecryptInit_ex(ctx, nil, nil, key, nonce) == 1
        else { throw EnvelopeError.cipherFailure }
        var length: Int32 = 0
        if !aad.isEmpty {
            guard EVP_DecryptUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1 else { throw EnvelopeError.cipherFailure }
        }
        var plaintext = [UInt8](repeating: 0, count: cipherCount + tagByteCount)
        let decrypted: Bool = sealed.withUnsafeBufferPointer { input in
            plaintext.withUnsafeMutableBufferPointer { out in
                guard let inBase = input.baseAddress, let outBase = out.baseAddress else { return false }
                var written: Int32 = 0
                if cipherCount > 0 {
                    guard EVP_DecryptUpdate(ctx, outBase, &written, inBase + nonceByteCount, Int32(cipherCount)) == 1 else { return false }
                }
                return true
            }
        }
        guard decrypted else { throw EnvelopeError.cipherFailure }
        guard tag.withUnsafeMutableBytes({ EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), $0.baseAddress) }) == 1 else {
            throw EnvelopeError.cipherFailure
        }
        var finalLength: Int32 = 0
        let verified = plaintext.withUnsafeMutableBufferPointer { out in
            EVP_DecryptFinal_ex(ctx, out.baseAddress.map { $0 + cipherCount }, &finalLength)
        }
        guard verified == 1 else {
            // Wipe what was decrypted before the tag failed: unauthenticated bytes never escape.
            for i in plaintext.indices { plaintext[i] = 0 }
            throw EnvelopeError.authenticationFailed
        }
        plaintext.removeLast(tagByteCount)
        return plaintext
    }
}
