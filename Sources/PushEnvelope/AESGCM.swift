import CHapiOpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// AES-256-GCM through OpenSSL's EVP interface. One context per call, owned by a class that
/// frees it in `deinit`, so no exit path leaks it.
enum AESGCM {
    static let nonceByteCount = 12
    static let tagByteCount = 16

    private final class Context {
        let pointer: OpaquePointer
        init() throws(PushEnvelopeError) {
            guard let pointer = EVP_CIPHER_CTX_new() else { throw PushEnvelopeError.cipherFailure }
            self.pointer = pointer
        }
        deinit { EVP_CIPHER_CTX_free(pointer) }
    }

    /// AES-256-GCM fetched once: OpenSSL 3's `EVP_aes_256_gcm()` looks the implementation up
    /// again on every init.
    /// A fetched `EVP_CIPHER` is immutable and documented as safe to share between threads.
    private struct FetchedCipher: @unchecked Sendable {
        let pointer: OpaquePointer?
    }
    private static let fetched = FetchedCipher(pointer: EVP_CIPHER_fetch(nil, "AES-256-GCM", nil) ?? EVP_aes_256_gcm())
    private static var cipher: OpaquePointer? { fetched.pointer }

    /// Returns `nonce ‖ ciphertext ‖ tag`.
    static func seal(plaintext: [UInt8], key: [UInt8], nonce: [UInt8], aad: [UInt8]) throws(PushEnvelopeError) -> [UInt8] {
        guard nonce.count == nonceByteCount else { throw PushEnvelopeError.invalidNonce }
        var output = [UInt8](repeating: 0, count: nonceByteCount + plaintext.count + tagByteCount)
        let ok = output.withUnsafeMutableBufferPointer { out in
            nonce.withUnsafeBufferPointer { nonceBytes in
                guard let base = out.baseAddress, let nonceBase = nonceBytes.baseAddress else { return false }
                base.update(from: nonceBase, count: nonceByteCount)
                return seal(plaintext: plaintext, key: key, aad: aad, into: base)
            }
        }
        guard ok else { throw PushEnvelopeError.cipherFailure }
        return output
    }

    /// One encryption context per thread, set up for AES-256-GCM once and re-keyed per seal
    /// (`EVP_EncryptInit_ex` with a NULL cipher keeps the cipher): a dispatch seals for
    /// thousands of devices, and allocating, initialising and cleansing a context each time
    /// cost more than the encryption itself. Freed when its thread exits.
    private static let threadContextKey: pthread_key_t? = {
        var key = pthread_key_t()
        let rc = pthread_key_create(&key) { context in
            if let context { EVP_CIPHER_CTX_free(OpaquePointer(context)) }
        }
        return rc == 0 ? key : nil
    }()

    /// This thread's sealing context, created on first use; nil if OpenSSL could not make one.
    private static func threadSealingContext() -> OpaquePointer? {
        guard let key = threadContextKey else { return nil }
        if let existing = pthread_getspecific(key) { return OpaquePointer(existing) }
        guard let ctx = EVP_CIPHER_CTX_new() else { return nil }
        guard EVP_EncryptInit_ex(ctx, cipher, nil, nil, nil) == 1, pthread_setspecific(key, UnsafeRawPointer(ctx)) == 0 else {
            EVP_CIPHER_CTX_free(ctx)
            return nil
        }
        return ctx
    }

    /// Encrypts into `output`, which holds the nonce in its first 12 bytes and has room for
    /// the ciphertext and the tag after it. The one place a seal touches OpenSSL.
    static func seal(plaintext: [UInt8], key: [UInt8], aad: [UInt8], into output: UnsafeMutablePointer<UInt8>) -> Bool {
        guard key.count == 32, let ctx = threadSealingContext() else { return false }
        // GCM's default IV length is the 12 bytes we use: no EVP_CTRL_GCM_SET_IVLEN needed.
        guard EVP_EncryptInit_ex(ctx, nil, nil, key, output) == 1 else { return false }
        var length: Int32 = 0
        if !aad.isEmpty {
            guard EVP_EncryptUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1 else { return false }
        }
        let cipherStart = output + nonceByteCount
        if !plaintext.isEmpty {
            guard EVP_EncryptUpdate(ctx, cipherStart, &length, plaintext, Int32(plaintext.count)) == 1,
                Int(length) == plaintext.count
            else { return false }
        }
        var finalLength: Int32 = 0
        guard EVP_EncryptFinal_ex(ctx, cipherStart + plaintext.count, &finalLength) == 1, finalLength == 0 else { return false }
        return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), cipherStart + plaintext.count) == 1
    }

    /// Verifies the tag and returns the plaintext of `nonce ‖ ciphertext ‖ tag`. No plaintext
    /// leaves this function unless OpenSSL verified the tag.
    static func open(sealed: [UInt8], key: [UInt8], aad: [UInt8]) throws(PushEnvelopeError) -> [UInt8] {
        guard sealed.count >= nonceByteCount + tagByteCount else { throw PushEnvelopeError.tooShort }
        guard key.count == 32 else { throw PushEnvelopeError.cipherFailure }
        let cipherCount = sealed.count - nonceByteCount - tagByteCount
        let nonce = Array(sealed[0..<nonceByteCount])
        var tag = Array(sealed[(sealed.count - tagByteCount)...])
        let context = try Context()
        let ctx = context.pointer
        guard EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(nonceByteCount), nil) == 1,
            EVP_DecryptInit_ex(ctx, nil, nil, key, nonce) == 1
        else { throw PushEnvelopeError.cipherFailure }
        var length: Int32 = 0
        if !aad.isEmpty {
            guard EVP_DecryptUpdate(ctx, nil, &length, aad, Int32(aad.count)) == 1 else { throw PushEnvelopeError.cipherFailure }
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
        guard decrypted else { throw PushEnvelopeError.cipherFailure }
        guard tag.withUnsafeMutableBytes({ EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), $0.baseAddress) }) == 1 else {
            throw PushEnvelopeError.cipherFailure
        }
        var finalLength: Int32 = 0
        let verified = plaintext.withUnsafeMutableBufferPointer { out in
            EVP_DecryptFinal_ex(ctx, out.baseAddress.map { $0 + cipherCount }, &finalLength)
        }
        guard verified == 1 else {
            // Wipe what was decrypted before the tag failed: unauthenticated bytes never escape.
            for i in plaintext.indices { plaintext[i] = 0 }
            throw PushEnvelopeError.authenticationFailed
        }
        plaintext.removeLast(tagByteCount)
        return plaintext
    }
}
