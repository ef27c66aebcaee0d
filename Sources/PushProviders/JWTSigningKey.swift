import CHapiOpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushEnvelope

/// A private key for signing JWTs through OpenSSL: ES256 (APNs provider tokens, P-256 only)
/// or RS256 (Google service-account assertions). Owns its `EVP_PKEY` and frees it in `deinit`.
/// Holds a secret: it has no public accessor for the key and never prints it.
package final class JWTSigningKey: @unchecked Sendable, CustomStringConvertible {
    // @unchecked: the EVP_PKEY is immutable after loading, and OpenSSL 3 allows concurrent
    // signing with one key (each call creates its own EVP_MD_CTX).

    package enum Algorithm: String, Sendable {
        case es256 = "ES256"
        case rs256 = "RS256"

        /// The key type OpenSSL 3's decoders are asked for.
        var openSSLKeyType: String {
            switch self {
            case .es256: "EC"
            case .rs256: "RSA"
            }
        }

        /// The parameter only a private key of that type has (`OSSL_PKEY_PARAM_PRIV_KEY`, `OSSL_PKEY_PARAM_RSA_D`).
        var openSSLPrivateParameter: String {
            switch self {
            case .es256: "priv"
            case .rs256: "d"
            }
        }
    }

    package let algorithm: Algorithm
    private let key: OpaquePointer

    /// Parses a PEM private key (PKCS#8, as in an APNs .p8 file, or a traditional EC/RSA key).
    /// `source` names where it came from, for error messages.
    package init(pem: [UInt8], algorithm: Algorithm, source: String) throws(PushCredentialError) {
        self.algorithm = algorithm
        // BIO_new_mem_buf does not copy: parse while the bytes are pinned.
        // Never OpenSSL's default password callback: it prompts on the terminal and blocks.
        var passphraseAsked: Int32 = 0
        let parsedKey: OpaquePointer?? = pem.withUnsafeBytes { raw in
            // No PEM armour, nothing OpenSSL could read: the malformed answer without setting up its decoders.
            guard Self.holdsPEMArmour(raw) else { return .some(nil) }
            guard raw.count <= Int(Int32.max), let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return .none }
            // The key type asked for first (a quarter of the general reader's cost), then the
            // general reader: it alone says what another key type or an encrypted block is.
            if let typed = hapi_pem_read_private_key_of_type_no_prompt(
                base, raw.count, algorithm.openSSLKeyType, algorithm.openSSLPrivateParameter, &passphraseAsked)
            {
                return .some(typed)
            }
            guard let bio = BIO_new_mem_buf(base, Int32(raw.count)) else { return .none }
            defer { BIO_free(bio) }
            return .some(hapi_pem_read_private_key_no_prompt(bio, &passphraseAsked))
        }
        guard let readResult = parsedKey else {
            throw PushCredentialError.malformed.with("\(source): out of memory reading the key")
        }
        guard let parsed = readResult else {
            ERR_clear_error()
            if passphraseAsked != 0 || Self.looksEncrypted(pem) {
                throw PushCredentialError.encrypted.with(
                    "\(source): encrypted keys are not supported: export it without a passphrase (openssl pkcs8 -topk8 -nocrypt)")
            }
            throw PushCredentialError.malformed.with("\(source) does not contain a PEM private key (expected a PKCS#8 PEM block, as in an APNs .p8 file)")
        }
        switch algorithm {
        case .es256:
            let curve = Self.groupName(parsed)
            guard EVP_PKEY_get_base_id(parsed) == EVP_PKEY_EC, curve == "prime256v1" || curve == "P-256" else {
                EVP_PKEY_free(parsed)
                throw PushCredentialError.wrongKeyType.with(
                    "\(source) is not a P-256 (prime256v1) EC private key: APNs provider tokens need the .p8 key from the Apple developer portal")
            }
        case .rs256:
            guard EVP_PKEY_get_base_id(parsed) == EVP_PKEY_RSA, EVP_PKEY_get_bits(parsed) >= 2048 else {
                EVP_PKEY_free(parsed)
                throw PushCredentialError.wrongKeyType.with("\(source): private_key is not an RSA key of at least 2048 bits")
            }
        }
        key = parsed
    }

    /// An ES256 signer over a Web Push VAPID key (RFC 8292), sharing its `EVP_PKEY`.
    init(vapid: WebPushP256Key) {
        EVP_PKEY_up_ref(vapid.evpKey)
        key = vapid.evpKey
        algorithm = .es256
    }

    deinit { EVP_PKEY_free(key) }

    package var description: String { "JWTSigningKey(\(algorithm.rawValue), redacted)" }

    /// Signs `message` with SHA-256. ES256 returns the JOSE form: 64 bytes `r ‖ s`, not DER.
    package func sign(_ message: [UInt8]) throws(PushCredentialError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw PushCredentialError.signingFailed.with("out of memory while signing") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            throw PushCredentialError.signingFailed.with("OpenSSL could not start a \(algorithm.rawValue) signature")
        }
        var length = 0
        guard message.withUnsafeBytes({ EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }) == 1 else {
            ERR_clear_error()
            throw PushCredentialError.signingFailed.with("OpenSSL could not size a \(algorithm.rawValue) signature")
        }
        var signature = [UInt8](repeating: 0, count: length)
        let ok = signature.withUnsafeMutableBufferPointer { out in
            message.withUnsafeBytes { EVP_DigestSign(context, out.baseAddress, &length, $0.baseAddress, $0.count) }
        }
        guard ok == 1 else {
            ERR_clear_error()
            throw PushCredentialError.signingFailed.with("OpenSSL failed to produce a \(algorithm.rawValue) signature")
        }
        signature.removeLast(signature.count - length)
        switch algorithm {
        case .rs256: return signature
        case .es256: return try Self.joseSignature(fromDER: signature)
        }
    }

    /// DER `ECDSA-Sig-Value` → fixed-width `r ‖ s` (32 bytes each), as RFC 7518 §3.4 requires.
    static func joseSignature(fromDER der: [UInt8]) throws(PushCredentialError) -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature = parsed else { throw PushCredentialError.signingFailed.with("OpenSSL returned an unparsable ECDSA signature") }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        guard let r, let s else { throw PushCredentialError.signingFailed.with("ECDSA signature lacks r or s") }
        var out = [UInt8](repeating: 0, count: 64)
        let written = out.withUnsafeMutableBufferPointer { buffer -> (Int32, Int32) in
            guard let base = buffer.baseAddress else { return (-1, -1) }
            return (BN_bn2binpad(r, base, 32), BN_bn2binpad(s, base + 32, 32))
        }
        guard written == (32, 32) else { throw PushCredentialError.signingFailed.with("ECDSA signature component exceeds 32 bytes") }
        return out
    }

    /// Whether `bytes` hold a PEM boundary (`-----BEGIN `), without which OpenSSL's PEM readers
    /// find nothing.
    static func holdsPEMArmour(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let marker = Array("-----BEGIN ".utf8)
        guard bytes.count >= marker.count else { return false }
        var start = 0
        while start <= bytes.count - marker.count {
            guard let dash = bytes[start...].firstIndex(of: marker[0]) else { return false }
            guard dash <= bytes.count - marker.count else { return false }
            if (0..<marker.count).allSatisfy({ bytes[dash + $0] == marker[$0] }) { return true }
            start = dash + 1
        }
        return false
    }

    /// An encrypted PEM block (PKCS#8 `ENCRYPTED PRIVATE KEY`, or a traditional key with
    /// `Proc-Type: 4,ENCRYPTED`), even when OpenSSL gave up before asking for a passphrase.
    static func looksEncrypted(_ pem: [UInt8]) -> Bool {
        let text = String(decoding: pem.prefix(1 << 16), as: UTF8.self)
        return text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED")
    }

    private static func groupName(_ key: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &buffer, buffer.count, &length) == 1 else {
            ERR_clear_error()
            return nil
        }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Reads a credential file, naming it (and the setting that named it) on failure.
    package static func readFile(_ path: String, setting: String) throws(PushCredentialError) -> [UInt8] {
        try CredentialFile.read(path, setting: setting)
    }
}
