import CHapiOpenSSL
import PushSync

/// The OpenSSL state one Web Push seal works with, made once and reused: a key-generation
/// context already set to P-256, an HMAC-SHA-256 context and an AES-128-GCM context, each
/// with its algorithm fetched from the provider once. Made per message, these cost more than
/// the key generation itself (provider look-ups by name, `EVP_KDF` re-creating its HMAC and
/// re-fetching SHA-256 on every call: 6 µs a derivation against 1 µs here). Never shared by two
/// seals at once: `withContext` lends one from a pool.
final class WebPushSealingContext: @unchecked Sendable {
    // @unchecked: only one thread uses a context at a time (the pool hands each out to one
    // borrower); the pool itself is behind a lock.
    private let keyGeneration: OpaquePointer
    private let hmac: OpaquePointer
    private let aes: OpaquePointer

    private init?() {
        guard let keyGeneration = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return nil }
        guard EVP_PKEY_keygen_init(keyGeneration) == 1, EVP_PKEY_CTX_set_group_name(keyGeneration, "P-256") == 1,
            let hmac = Self.hmacContext()
        else {
            EVP_PKEY_CTX_free(keyGeneration)
            return nil
        }
        guard let aes = EVP_CIPHER_CTX_new() else {
            EVP_PKEY_CTX_free(keyGeneration)
            EVP_MAC_CTX_free(hmac)
            return nil
        }
        guard EVP_EncryptInit_ex(aes, Self.algorithms.aes128GCM, nil, nil, nil) == 1 else {
            EVP_PKEY_CTX_free(keyGeneration)
            EVP_MAC_CTX_free(hmac)
            EVP_CIPHER_CTX_free(aes)
            return nil
        }
        self.keyGeneration = keyGeneration
        self.hmac = hmac
        self.aes = aes
    }

    deinit {
        EVP_PKEY_CTX_free(keyGeneration)
        EVP_MAC_CTX_free(hmac)
        EVP_CIPHER_CTX_free(aes)
    }

    /// Algorithms fetched once: fetched `EVP_MAC` and `EVP_CIPHER` objects are immutable and
    /// documented as safe to share between threads.
    private struct Algorithms: @unchecked Sendable {
        let hmac: OpaquePointer?
        let aes128GCM: OpaquePointer?
    }
    private static let algorithms = Algorithms(
        hmac: EVP_MAC_fetch(nil, "HMAC", nil), aes128GCM: EVP_CIPHER_fetch(nil, "AES-128-GCM", nil) ?? EVP_aes_128_gcm())

    private static func hmacContext() -> OpaquePointer? {
        guard let algorithm = algorithms.hmac, let context = EVP_MAC_CTX_new(algorithm) else { return nil }
        // Static strings: an OSSL_PARAM keeps the pointers it is given, which a Swift temporary
        // would not outlive.
        let name: StaticString = "digest"
        let value: StaticString = "SHA256"
        var params = [
            OSSL_PARAM_construct_utf8_string(
                UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self),
                UnsafeMutableRawPointer(mutating: value.utf8Start).assumingMemoryBound(to: CChar.self), 0),
            OSSL_PARAM_construct_end(),
        ]
        guard EVP_MAC_CTX_set_params(context, &params) == 1 else {
            EVP_MAC_CTX_free(context)
            return nil
        }
        return context
    }

    /// Contexts not lent out. Grows to the number of seals that ever ran at once (the threads
    /// sealing in parallel), never beyond.
    private static let idle = Locked<[WebPushSealingContext]>([])

    /// Runs `body` with a context no other seal is using; nil when OpenSSL cannot make one.
    static func withContext<Result>(_ body: (WebPushSealingContext) -> Result) -> Result? {
        let context = idle.withLock { $0.popLast() } ?? WebPushSealingContext()
        guard let context else {
            ERR_clear_error()
            return nil
        }
        defer { idle.withLock { $0.append(context) } }
        return body(context)
    }

    /// A fresh P-256 key pair; the caller frees it.
    func generateKey() -> OpaquePointer? {
        var key: OpaquePointer?
        guard EVP_PKEY_generate(keyGeneration, &key) == 1 else {
            ERR_clear_error()
            return nil
        }
        return key
    }

    /// HMAC-SHA-256 of `first ‖ second` under `key`, into `output` (32 bytes).
    func hmac(
        key: UnsafeRawBufferPointer, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
        into output: UnsafeMutableRawPointer
    ) -> Bool {
        var length = 0
        let ok = EVP_MAC_init(hmac, key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count, nil) == 1
            && EVP_MAC_update(hmac, first.baseAddress?.assumingMemoryBound(to: UInt8.self), first.count) == 1
            && (second.isEmpty || EVP_MAC_update(hmac, second.baseAddress?.assumingMemoryBound(to: UInt8.self), second.count) == 1)
            && EVP_MAC_final(hmac, output.assumingMemoryBound(to: UInt8.self), &length, 32) == 1 && length == 32
        if !ok { ERR_clear_error() }
        return ok
    }

    /// AES-128-GCM of `plaintext ‖ 0x02` (RFC 8188's last-record delimiter) into `output`,
    /// which has room for it and the 16-byte tag after it.
    func sealRecord(_ plaintext: UnsafeRawBufferPointer, key: UnsafeRawPointer, nonce: UnsafeRawPointer, into output: UnsafeMutablePointer<UInt8>) -> Bool {
        var length: Int32 = 0
        var delimiter: UInt8 = 2
        var finalLength: Int32 = 0
        let count = plaintext.count
        let ok = EVP_EncryptInit_ex(aes, nil, nil, key.assumingMemoryBound(to: UInt8.self), nonce.assumingMemoryBound(to: UInt8.self)) == 1
            && (count == 0
                || (EVP_EncryptUpdate(aes, output, &length, plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1
                    && Int(length) == count))
            && EVP_EncryptUpdate(aes, output + count, &length, &delimiter, 1) == 1 && length == 1
            && EVP_EncryptFinal_ex(aes, output + count + 1, &finalLength) == 1 && finalLength == 0
            && EVP_CIPHER_CTX_ctrl(aes, EVP_CTRL_GCM_GET_TAG, 16, output + count + 1) == 1
        if !ok { ERR_clear_error() }
        return ok
    }
}
