import CHapiOpenSSL
import CHapiTestOpenSSL
import PushEnvelope

/// A browser's side of a Web Push subscription, for tests and the demo: its own P-256 key pair
/// and auth secret, and a decryptor for `aes128gcm` bodies (RFC 8291 / RFC 8188) written apart
/// from the sender's code: HKDF from HMAC-SHA-256 by the RFC 5869 steps, the sender's key read
/// as a SubjectPublicKeyInfo, AES-128-GCM opened through EVP. A bug in the sender cannot be
/// mirrored here by sharing code.
public final class WebPushTestBrowser: @unchecked Sendable {
    // @unchecked: immutable after init; OpenSSL allows concurrent derives with one key.
    private let key: OpaquePointer
    /// The uncompressed public point, 65 bytes.
    public let publicKey: [UInt8]
    public let authSecret: [UInt8]

    /// `p256dh` as `PushSubscription.toJSON()` gives it: URL-safe base64, no padding.
    public var p256dh: String { Base64.urlEncodeUnpadded(publicKey) }
    public var auth: String { Base64.urlEncodeUnpadded(authSecret) }

    public init?() {
        guard let generated = hapi_test_ec_keygen("P-256") else { return nil }
        var encoded: UnsafeMutablePointer<UInt8>?
        let length = EVP_PKEY_get1_encoded_public_key(generated, &encoded)
        guard length == 65, let encoded else {
            EVP_PKEY_free(generated)
            return nil
        }
        publicKey = Array(UnsafeBufferPointer(start: encoded, count: length))
        hapi_openssl_free(encoded)
        var secret = [UInt8](repeating: 0, count: 16)
        guard secret.withUnsafeMutableBufferPointer({ RAND_bytes($0.baseAddress, 16) }) == 1 else {
            EVP_PKEY_free(generated)
            return nil
        }
        authSecret = secret
        key = generated
    }

    deinit { EVP_PKEY_free(key) }

    /// A subscription body as the PWA posts it to `/api/push/subscribe`.
    public func subscribeBody(endpoint: String) -> String {
        #"{"endpoint":"\#(endpoint)","keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#
    }

    /// What the service worker would read from an `aes128gcm` body, or nil if it does not
    /// decrypt (wrong key, altered bytes, bad header or padding).
    public func decrypt(_ body: [UInt8]) -> [UInt8]? {
        guard body.count >= 21 else { return nil }
        let salt = Array(body[0..<16])
        let recordSize = Int(body[16]) << 24 | Int(body[17]) << 16 | Int(body[18]) << 8 | Int(body[19])
        let idLength = Int(body[20])
        guard idLength == 65, body.count >= 21 + idLength + 17, recordSize >= 18 else { return nil }
        let senderKey = Array(body[21..<(21 + idLength)])
        let record = Array(body[(21 + idLength)...])
        guard record.count <= recordSize, let secret = sharedSecret(with: senderKey) else { return nil }

        let prkKey = Self.hmac(key: authSecret, secret)
        let keyInfo = Array("WebPush: info".utf8) + [0] + publicKey + senderKey + [1]
        let ikm = Self.hmac(key: prkKey, keyInfo)  // 32 bytes: one HMAC block
        let prk = Self.hmac(key: salt, ikm)
        let cek = Array(Self.hmac(key: prk, Array("Content-Encoding: aes128gcm".utf8) + [0, 1]).prefix(16))
        let nonce = Array(Self.hmac(key: prk, Array("Content-Encoding: nonce".utf8) + [0, 1]).prefix(12))
        guard var padded = Self.open(record, key: cek, nonce: nonce) else { return nil }
        // Strip the padding back to the delimiter; 0x02 marks the last record.
        while padded.last == 0 { padded.removeLast() }
        guard padded.last == 2 else { return nil }
        padded.removeLast()
        return padded
    }

    /// SubjectPublicKeyInfo for id-ecPublicKey / prime256v1, before the raw point.
    static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03,
        0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// A raw P-256 public key (a VAPID `publicKey`, URL-safe base64) as PEM, for `JWTVerifier`.
    public static func publicKeyPEM(vapidPublicKey: String) -> String? {
        guard let point = JWTVerifier.base64URLDecode(vapidPublicKey), point.count == 65 else { return nil }
        let body = Base64.encode(spkiPrefix + point)
        var lines = ["-----BEGIN PUBLIC KEY-----"]
        var rest = Substring(body)
        while !rest.isEmpty {
            lines.append(String(rest.prefix(64)))
            rest = rest.dropFirst(64)
        }
        lines.append("-----END PUBLIC KEY-----")
        return lines.joined(separator: "\n") + "\n"
    }

    private func sharedSecret(with point: [UInt8]) -> [UInt8]? {
        let der = Self.spkiPrefix + point
        let peer: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let peer else { return nil }
        defer { EVP_PKEY_free(peer) }
        guard let context = EVP_PKEY_CTX_new(key, nil) else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        var length = 32
        var out = [UInt8](repeating: 0, count: 32)
        let ok = out.withUnsafeMutableBufferPointer {
            EVP_PKEY_derive_init(context) == 1 && EVP_PKEY_derive_set_peer(context, peer) == 1 && EVP_PKEY_derive(context, $0.baseAddress, &length) == 1
        }
        return ok && length == 32 ? out : nil
    }

    private static func hmac(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = out.withUnsafeMutableBufferPointer { HMAC(EVP_sha256(), key, Int32(key.count), data, data.count, $0.baseAddress, &length) }
        return out
    }

    private static func open(_ record: [UInt8], key: [UInt8], nonce: [UInt8]) -> [UInt8]? {
        guard record.count >= 16, let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        let cipherCount = record.count - 16
        var tag = Array(record[cipherCount...])
        var out = [UInt8](repeating: 0, count: cipherCount + 16)
        var length: Int32 = 0
        var finalLength: Int32 = 0
        let ok = out.withUnsafeMutableBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            return EVP_DecryptInit_ex(context, EVP_aes_128_gcm(), nil, key, nonce) == 1
                && EVP_DecryptUpdate(context, base, &length, record, Int32(cipherCount)) == 1
                && tag.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, $0.baseAddress) } == 1
                && EVP_DecryptFinal_ex(context, base + Int(length), &finalLength) == 1
        }
        guard ok else { return nil }
        return Array(out.prefix(Int(length + finalLength)))
    }
}
