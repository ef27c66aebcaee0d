import CHapiOpenSSL

/// A P-256 key for Web Push: the ephemeral sender key of RFC 8291, a browser's `p256dh` public
/// key, or the VAPID key pair of RFC 8292. Owns its `EVP_PKEY` and frees it in `deinit`; built
/// only through OpenSSL 3's provider interface (no deprecated `EC_KEY`), so OpenSSL checks that
/// every point it is given lies on the curve.
/// Holds a secret when it has a private part: `description` never shows it.
package final class WebPushP256Key: @unchecked Sendable, CustomStringConvertible {
    // @unchecked: the EVP_PKEY is immutable after construction; OpenSSL 3 allows concurrent
    // derive and sign calls with one key (each makes its own EVP_PKEY_CTX).

    /// The uncompressed point `0x04 ‖ X ‖ Y`.
    package static let publicKeyByteCount = 65
    package static let privateKeyByteCount = 32

    /// The `EVP_PKEY`, for the package's signers (`EVP_PKEY_up_ref` before keeping it).
    package let evpKey: OpaquePointer
    /// The uncompressed public point, 65 bytes.
    package let publicKey: [UInt8]
    package let hasPrivateKey: Bool

    private init(evpKey: OpaquePointer, publicKey: [UInt8], hasPrivateKey: Bool) {
        self.evpKey = evpKey
        self.publicKey = publicKey
        self.hasPrivateKey = hasPrivateKey
    }

    deinit { EVP_PKEY_free(evpKey) }

    package var description: String { hasPrivateKey ? "WebPushP256Key(private, redacted)" : "WebPushP256Key(public)" }

    /// A fresh key pair from OpenSSL's CSPRNG.
    package static func generate() throws(WebPushCryptoError) -> WebPushP256Key {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { throw .keyGenerationFailed }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else {
            ERR_clear_error()
            throw .keyGenerationFailed
        }
        guard let point = encodedPublicKey(key) else {
            EVP_PKEY_free(key)
            throw .keyGenerationFailed
        }
        return WebPushP256Key(evpKey: key, publicKey: point, hasPrivateKey: true)
    }

    /// A public key from its uncompressed point; nil unless it is 65 bytes starting 0x04 and
    /// OpenSSL accepts it as a point on P-256 (`EVP_PKEY_public_check_quick`: on the curve, not
    /// the point at infinity, coordinates in range; P-256's cofactor is 1, so that is the whole
    /// check). Checked here once, so an ECDH with it skips OpenSSL's per-derive check.
    package static func publicKey(_ point: [UInt8]) -> WebPushP256Key? {
        guard point.count == publicKeyByteCount, point.first == 0x04,
            let key = fromData(publicKey: point, privateScalar: nil)
        else { return nil }
        guard let check = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
            EVP_PKEY_free(key)
            return nil
        }
        defer { EVP_PKEY_CTX_free(check) }
        guard EVP_PKEY_public_check_quick(check) == 1 else {
            ERR_clear_error()
            EVP_PKEY_free(key)
            return nil
        }
        return WebPushP256Key(evpKey: key, publicKey: point, hasPrivateKey: false)
    }

    /// A key pair from its 32-byte private scalar and 65-byte public point (the `web-push`
    /// package's `vapidKeys`, or RFC 8291's example key); nil unless both are well formed and
    /// belong together (OpenSSL's pairwise check).
    package static func keyPair(privateScalar: [UInt8], publicKey point: [UInt8]) -> WebPushP256Key? {
        guard privateScalar.count == privateKeyByteCount, point.count == publicKeyByteCount, point.first == 0x04,
            let key = fromData(publicKey: point, privateScalar: privateScalar)
        else { return nil }
        guard let check = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else {
            EVP_PKEY_free(key)
            return nil
        }
        defer { EVP_PKEY_CTX_free(check) }
        guard EVP_PKEY_pairwise_check(check) == 1 else {
            ERR_clear_error()
            EVP_PKEY_free(key)
            return nil
        }
        return WebPushP256Key(evpKey: key, publicKey: point, hasPrivateKey: true)
    }

    /// True when `point` is a 65-byte uncompressed point on P-256 (a valid `p256dh`).
    package static func isValidPublicKey(_ point: [UInt8]) -> Bool {
        publicKey(point) != nil
    }

    /// The private scalar, 32 bytes big-endian, for saving a new VAPID pair; nil for a public key.
    package func privateScalar() -> [UInt8]? {
        guard hasPrivateKey else { return nil }
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(evpKey, "priv", &number) == 1, let number else {
            ERR_clear_error()
            return nil
        }
        defer { BN_clear_free(number) }
        var out = [UInt8](repeating: 0, count: Self.privateKeyByteCount)
        let written = out.withUnsafeMutableBufferPointer { BN_bn2binpad(number, $0.baseAddress, Int32(Self.privateKeyByteCount)) }
        return written == Int32(Self.privateKeyByteCount) ? out : nil
    }

    /// ECDH (RFC 8291 §3.1): the 32-byte shared secret with `peer`'s public point (checked when
    /// `peer` was made).
    package func sharedSecret(with peer: WebPushP256Key) throws(WebPushCryptoError) -> [UInt8] {
        guard hasPrivateKey, let context = EVP_PKEY_CTX_new_from_pkey(nil, evpKey, nil) else { throw .keyAgreementFailed }
        defer { EVP_PKEY_CTX_free(context) }
        var length = 32
        var secret = [UInt8](repeating: 0, count: 32)
        let ok = secret.withUnsafeMutableBufferPointer { out in
            EVP_PKEY_derive_init(context) == 1 && EVP_PKEY_derive_set_peer_ex(context, peer.evpKey, 0) == 1
                && EVP_PKEY_derive(context, out.baseAddress, &length) == 1
        }
        guard ok, length == 32 else {
            ERR_clear_error()
            throw .keyAgreementFailed
        }
        return secret
    }

    private static func fromData(publicKey point: [UInt8], privateScalar: [UInt8]?) -> OpaquePointer? {
        guard let builder = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(builder) }
        var number: OpaquePointer?
        defer { if let number { BN_clear_free(number) } }
        var pushed = OSSL_PARAM_BLD_push_utf8_string(builder, Self.cString("group"), Self.cString("prime256v1"), 0) == 1
        pushed = pushed && point.withUnsafeBytes { OSSL_PARAM_BLD_push_octet_string(builder, Self.cString("pub"), $0.baseAddress, $0.count) == 1 }
        if let privateScalar {
            number = privateScalar.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
            pushed = pushed && number != nil && OSSL_PARAM_BLD_push_BN(builder, Self.cString("priv"), number) == 1
        }
        guard pushed, let params = OSSL_PARAM_BLD_to_param(builder) else {
            ERR_clear_error()
            return nil
        }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        let selection = privateScalar == nil ? hapi_evp_pkey_selection_public() : hapi_evp_pkey_selection_keypair()
        guard EVP_PKEY_fromdata_init(context) == 1, EVP_PKEY_fromdata(context, &key, selection, params) == 1, let key else {
            ERR_clear_error()
            return nil
        }
        return key
    }

    /// A C string that lives for the whole run: OpenSSL's parameter builder keeps the key
    /// names' pointers (not copies) until `OSSL_PARAM_BLD_to_param`, which a Swift temporary
    /// string would not survive.
    private static func cString(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    private static func encodedPublicKey(_ key: OpaquePointer) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: publicKeyByteCount)
        var length = 0
        let ok = out.withUnsafeMutableBufferPointer {
            EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", $0.baseAddress, $0.count, &length)
        }
        guard ok == 1, length == publicKeyByteCount, out[0] == 0x04 else {
            ERR_clear_error()
            return nil
        }
        return out
    }
}
