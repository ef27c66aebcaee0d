import CHapiOpenSSL
import Foundation
import PushEnvelope
import PushLoopbackServer
import PushNative
import PushTestSupport

/// The reference for one Web Push seal: the same OpenSSL steps as RFC 8291 needs, called
/// directly (a fresh P-256 key, the browser's key imported, ECDH, HKDF ×4, a random salt,
/// AES-128-GCM), with no Swift wrapper around them.
func rawWebPushSeal(_ plaintext: [UInt8], peerSPKI: [UInt8], auth: [UInt8]) -> Int {
    guard let keygen = EVP_PKEY_CTX_new_from_name(nil, "EC", nil) else { return 0 }
    defer { EVP_PKEY_CTX_free(keygen) }
    var key: OpaquePointer?
    guard EVP_PKEY_keygen_init(keygen) == 1, EVP_PKEY_CTX_set_group_name(keygen, "P-256") == 1, EVP_PKEY_generate(keygen, &key) == 1, let key else { return 0 }
    defer { EVP_PKEY_free(key) }
    var publicKey = [UInt8](repeating: 0, count: 65)
    var publicLength = 0
    _ = EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", &publicKey, 65, &publicLength)
    let peer: OpaquePointer? = peerSPKI.withUnsafeBufferPointer { buffer in
        var cursor = buffer.baseAddress
        return d2i_PUBKEY(nil, &cursor, buffer.count)
    }
    guard let peer, let derive = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { return 0 }
    defer {
        EVP_PKEY_free(peer)
        EVP_PKEY_CTX_free(derive)
    }
    var secret = [UInt8](repeating: 0, count: 32)
    var secretLength = 32
    guard EVP_PKEY_derive_init(derive) == 1, EVP_PKEY_derive_set_peer(derive, peer) == 1, EVP_PKEY_derive(derive, &secret, &secretLength) == 1 else { return 0 }
    func hkdf(_ mode: Int32, salt: [UInt8]?, key: [UInt8], info: [UInt8]?, count: Int) -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "HKDF", nil) else { return [] }
        defer { EVP_PKEY_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: count)
        var length = count
        _ = EVP_PKEY_derive_init(context)
        _ = EVP_PKEY_CTX_set_hkdf_mode(context, mode)
        _ = EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256())
        _ = EVP_PKEY_CTX_set1_hkdf_key(context, key, Int32(key.count))
        if let salt { _ = EVP_PKEY_CTX_set1_hkdf_salt(context, salt, Int32(salt.count)) }
        if let info { _ = EVP_PKEY_CTX_add1_hkdf_info(context, info, Int32(info.count)) }
        _ = EVP_PKEY_derive(context, &out, &length)
        return out
    }
    var salt = [UInt8](repeating: 0, count: 16)
    _ = RAND_bytes(&salt, 16)
    let peerPoint = Array(peerSPKI.suffix(65))
    let ikm = hkdf(0, salt: auth, key: secret, info: Array("WebPush: info\0".utf8) + peerPoint + publicKey, count: 32)
    let prk = hkdf(1, salt: salt, key: ikm, info: nil, count: 32)
    let cek = hkdf(2, salt: nil, key: prk, info: Array("Content-Encoding: aes128gcm\0".utf8), count: 16)
    let nonce = hkdf(2, salt: nil, key: prk, info: Array("Content-Encoding: nonce\0".utf8), count: 12)
    guard let cipher = EVP_CIPHER_CTX_new() else { return 0 }
    defer { EVP_CIPHER_CTX_free(cipher) }
    let record = plaintext + [2]
    var out = [UInt8](repeating: 0, count: record.count + 16)
    var length: Int32 = 0
    out.withUnsafeMutableBufferPointer { buffer in
        guard let base = buffer.baseAddress else { return }
        _ = EVP_EncryptInit_ex(cipher, EVP_aes_128_gcm(), nil, cek, nonce)
        _ = EVP_EncryptUpdate(cipher, base, &length, record, Int32(record.count))
        var finalLength: Int32 = 0
        _ = EVP_EncryptFinal_ex(cipher, base + Int(length), &finalLength)
        _ = EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_GET_TAG, 16, base + record.count)
    }
    return 86 + out.count
}

/// `hapi-push-bench webpush`: sealing one Web Push message against raw OpenSSL doing the same
/// steps (goal ≥ 0.7), and a dispatch to 1,000 subscriptions over one HTTP/2 connection against
/// h2load POSTing the same body to the same stand-in (goal ≥ 0.4).
func benchWebPush() async throws {
    guard let browser = WebPushTestBrowser() else { throw LoopbackServerError(message: "no browser key") }
    let session = PushSession(id: "0d5c1a9e-5f7e-4d8b-9a55-3f1f7d2c8b11", metadata: ["flavor": "claude", "name": "hapi"])
    let payload = PushNotificationComposer.webReady(for: session)
    let plaintext = Array(payload.json.utf8)
    let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01,
        0x07, 0x03, 0x42, 0x00,
    ]
    print("\n== Web Push (\(plaintext.count)-byte payload) ==")
    var sink = 0
    let reference = measure(seconds: 2) { sink &+= rawWebPushSeal(plaintext, peerSPKI: spkiPrefix + browser.publicKey, auth: browser.authSecret) }
    let sealed = try measure(seconds: 2) {
        sink &+= try WebPushCipher.seal(plaintext: plaintext, subscriptionKey: browser.publicKey, authSecret: browser.authSecret).count
    }
    print("raw OpenSSL, the same steps (reference) \(format(reference))")
    print("WebPushCipher.seal                      \(format(sealed))   ratio \(String(format: "%.2f", sealed / reference)) (goal ≥ 0.7)")

    let server = try LoopbackServer { _ in .init(status: 201) }
    defer { server.stop() }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-bench-webpush-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let environment = [
        "HAPI_HOME": directory, "HAPI_PUSH_CA_FILE": server.caCertificatePath ?? "", "HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS": "1",
        "HAPI_IOS_PUSH": "off", "HAPI_ANDROID_PUSH": "off",
    ]
    var runtime = NativePush.Configuration()
    runtime.connections.maximumPerHost = 1
    let push = try await NativePush.start(environment: environment, dataDirectory: directory, persistSettings: false, runtime: runtime)
    guard let routes = push.webPush else { throw LoopbackServerError(message: push.webPushOffReason ?? "Web Push is off") }
    for i in 0..<1000 {
        try await routes.store.addWebSubscription(
            namespace: "bench", endpoint: server.baseURL + "/push/\(i)", p256dh: browser.p256dh, auth: browser.auth, now: Int64(i))
    }
    _ = try await push.sendWebPush(payload, namespace: "bench", nativeSent: false)  // warm: the connection and the JWT
    let rounds = 5
    var sent = 0
    let elapsed = try await secondsAsync {
        for _ in 0..<rounds { sent += try await push.sendWebPush(payload, namespace: "bench", nativeSent: false).deliveries.filter { $0.outcome == .sent }.count }
    }
    await push.shutdown()
    let rate = Double(sent) / elapsed
    let body = try WebPushCipher.seal(plaintext: plaintext, subscriptionKey: browser.publicKey, authSecret: browser.authSecret)
    let ceiling = h2loadRate(url: server.baseURL + "/push/0", body: body, requests: 20_000, streams: 100)
    if let ceiling {
        print("dispatch to 1,000 subscriptions: \(format(rate)) messages   h2load \(format(ceiling))   ratio \(String(format: "%.2f", rate / ceiling)) (goal ≥ 0.4)")
    } else {
        print("dispatch to 1,000 subscriptions: \(format(rate)) messages   (h2load unavailable: install nghttp2-client)")
    }
    print("connections used: \(server.connectionsAccepted - (ceiling == nil ? 0 : 1)) for the dispatch (h2load: 1)")
    print("(every message costs a fresh P-256 key and an ECDH, RFC 8291's price; h2load re-sends one sealed body)")
    if sink == 42 { print("") }
}
