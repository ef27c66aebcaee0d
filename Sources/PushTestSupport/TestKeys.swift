import CHapiOpenSSL
import CHapiTestOpenSSL
public import PushEnvelope

/// Throwaway keys for tests and the demo, generated with OpenSSL at run time so no private key
/// is ever committed.
public enum TestKeys {
    public struct KeyPair: Sendable {
        /// A PKCS#8 private key, PEM-encoded.
        public let privateKeyPEM: String
        /// The SubjectPublicKeyInfo public key, PEM-encoded.
        public let publicKeyPEM: String
    }

    /// A P-256 key, as in an APNs `.p8` file.
    public static func p256() -> KeyPair? {
        generate { hapi_test_ec_keygen("P-256") }
    }

    /// An RSA-2048 key, as in a Google service account.
    public static func rsa2048() -> KeyPair? {
        generate { hapi_test_rsa_keygen(2048) }
    }

    /// A P-384 key: the wrong curve for APNs.
    public static func p384() -> KeyPair? {
        generate { hapi_test_ec_keygen("P-384") }
    }

    /// A P-256 (or, with `rsa`, an RSA-2048) private key encrypted with `passphrase`: PKCS#8
    /// `ENCRYPTED PRIVATE KEY`, or with `traditional` the `Proc-Type: 4,ENCRYPTED` form.
    public static func encryptedPEM(rsa: Bool = false, passphrase: String = "hunter2", traditional: Bool = false) -> String? {
        guard let key = rsa ? hapi_test_rsa_keygen(2048) : hapi_test_ec_keygen("P-256") else { return nil }
        defer { EVP_PKEY_free(key) }
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard hapi_test_write_encrypted_key(bio, key, passphrase, traditional ? 1 : 0) == 1 else { return nil }
        return read(bio)
    }

    /// A P-256 (or, with `rsa`, an RSA-2048) private key unencrypted in its type's own PEM form:
    /// `EC PRIVATE KEY` (SEC 1) or `RSA PRIVATE KEY` (PKCS#1).
    public static func traditionalPEM(rsa: Bool = false) -> String? {
        guard let key = rsa ? hapi_test_rsa_keygen(2048) : hapi_test_ec_keygen("P-256") else { return nil }
        defer { EVP_PKEY_free(key) }
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard hapi_test_write_traditional_key(bio, key) == 1 else { return nil }
        return read(bio)
    }

    private static func generate(_ make: () -> OpaquePointer?) -> KeyPair? {
        guard let key = make() else { return nil }
        defer { EVP_PKEY_free(key) }
        guard let privateBIO = BIO_new(BIO_s_mem()), let publicBIO = BIO_new(BIO_s_mem()) else { return nil }
        defer {
            BIO_free(privateBIO)
            BIO_free(publicBIO)
        }
        guard PEM_write_bio_PKCS8PrivateKey(privateBIO, key, nil, nil, 0, nil, nil) == 1,
            PEM_write_bio_PUBKEY(publicBIO, key) == 1
        else { return nil }
        return KeyPair(privateKeyPEM: read(privateBIO), publicKeyPEM: read(publicBIO))
    }

    private static func read(_ bio: OpaquePointer) -> String {
        var pointer: UnsafeMutablePointer<CChar>?
        let length = hapi_openssl_bio_mem_data(bio, &pointer)
        guard let pointer, length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }
}

/// Verifies compact JWS tokens with a public key, as Apple and Google do.
public enum JWTVerifier {
    /// The decoded header and claims when the signature verifies under `publicKeyPEM`.
    public static func verify(_ token: String, publicKeyPEM: String) -> (header: PushJSONValue, claims: PushJSONValue)? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerBytes = base64URLDecode(parts[0]), let claimBytes = base64URLDecode(parts[1]),
            let signature = base64URLDecode(parts[2]), let header = try? JSONParser.parse(headerBytes),
            let claims = try? JSONParser.parse(claimBytes), let algorithm = header["alg"]?.stringValue
        else { return nil }
        let signingInput = Array((parts[0] + "." + parts[1]).utf8)
        let derSignature: [UInt8]
        switch algorithm {
        case "ES256":
            guard signature.count == 64, let der = derFromJOSE(signature) else { return nil }
            derSignature = der
        case "RS256":
            derSignature = signature
        default:
            return nil
        }
        guard let key = publicKey(publicKeyPEM) else { return nil }
        defer { EVP_PKEY_free(key) }
        guard let context = EVP_MD_CTX_new() else { return nil }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return nil }
        let result = derSignature.withUnsafeBytes { sig in
            signingInput.withUnsafeBytes { input in
                EVP_DigestVerify(
                    context, sig.baseAddress?.assumingMemoryBound(to: UInt8.self), sig.count,
                    input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count)
            }
        }
        ERR_clear_error()
        return result == 1 ? (header, claims) : nil
    }

    public static func base64URLDecode(_ text: String) -> [UInt8]? {
        var standard = text.replacingCharacters("-", "+").replacingCharacters("_", "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return try? Base64.decode(standard)
    }

    private static func publicKey(_ pem: String) -> OpaquePointer? {
        let bytes = Array(pem.utf8)
        // BIO_new_mem_buf does not copy: parse while the bytes are pinned.
        return bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return hapi_pem_read_pubkey_no_prompt(bio)
        }
    }

    private static func derFromJOSE(_ signature: [UInt8]) -> [UInt8]? {
        guard let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let r = signature.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = signature.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress.map { $0 + 32 }, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else { return nil }
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(sig, &out)
        guard length > 0, let out else { return nil }
        defer { hapi_openssl_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: Int(length)))
    }
}

extension String {
    fileprivate func replacingCharacters(_ target: Character, _ replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}
