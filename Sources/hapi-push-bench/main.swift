import CHapiOpenSSL
import Foundation
import PushNative

/// `make bench`: every figure is printed next to a reference measured in the same run, as a
/// ratio, because absolute numbers on a shared 2-core machine mean little.

func measure(seconds: Double = 1.0, _ body: () throws -> Void) rethrows -> Double {
    // Warm up, then count iterations for `seconds` of wall time.
    for _ in 0..<200 { try body() }
    let start = DispatchTime.now().uptimeNanoseconds
    var iterations = 0
    var elapsed: Double = 0
    repeat {
        for _ in 0..<100 { try body() }
        iterations += 100
        elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    } while elapsed < seconds
    return Double(iterations) / elapsed
}

func format(_ rate: Double) -> String { String(format: "%12.0f/s", rate) }

/// The reference: one raw AES-256-GCM encryption of the same plaintext through OpenSSL EVP,
/// with no JSON, no base64 and no random nonce: the floor any seal must pay.
func rawAESGCM(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) -> Int32 {
    guard let ctx = EVP_CIPHER_CTX_new() else { return 0 }
    defer { EVP_CIPHER_CTX_free(ctx) }
    var out = [UInt8](repeating: 0, count: plaintext.count + 16)
    var length: Int32 = 0
    var tag = [UInt8](repeating: 0, count: 16)
    EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce)
    EVP_EncryptUpdate(ctx, nil, &length, PushEnvelope.associatedData, Int32(PushEnvelope.associatedData.count))
    EVP_EncryptUpdate(ctx, &out, &length, plaintext, Int32(plaintext.count))
    EVP_EncryptFinal_ex(ctx, &out, &length)
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, &tag)
    return length
}

func benchEnvelope() throws {
    let key = try PushKey.generate()
    let payload = NotificationPayload(
        type: .permissionRequest, sessionId: "0d5c1a9e-5f7e-4d8b-9a55-3f1f7d2c8b11", sessionName: "claude - hapi",
        url: "/sessions/0d5c1a9e-5f7e-4d8b-9a55-3f1f7d2c8b11", requestId: "toolu_01HXYZ",
        title: "Permission request", body: "Bash: swift test --parallel (in /home/dev/hapi)", severity: .warning)
    let plaintext = payload.canonicalJSON
    let nonce = [UInt8](repeating: 7, count: 12)
    print("== Envelope (typical payload, \(plaintext.count)-byte plaintext) ==")
    var sink = 0
    let reference = measure { sink &+= Int(rawAESGCM(plaintext, key: key.rawBytes, nonce: nonce)) }
    let sealOnly = try measure { sink &+= try PushEnvelope.seal(plaintext, key: key).utf8.count }
    let composeAndSeal = try measure { sink &+= try PushEnvelope.seal(payload.canonicalJSON, key: key).utf8.count }
    let envelope = try PushEnvelope.seal(plaintext, key: key)
    let open = try measure { sink &+= try PushEnvelope.open(envelope, key: key).count }
    print("raw OpenSSL AES-256-GCM (reference) \(format(reference))")
    print("seal (random nonce + base64)        \(format(sealOnly))   ratio \(String(format: "%.2f", sealOnly / reference))")
    print("canonical JSON + seal               \(format(composeAndSeal))   ratio \(String(format: "%.2f", composeAndSeal / reference))")
    print("open (base64 + verify)              \(format(open))   ratio \(String(format: "%.2f", open / reference))")
    if sink == 42 { print("") }
}

do {
    try benchEnvelope()
} catch {
    FileHandle.standardError.write(Data("bench failed: \(error)\n".utf8))
    exit(1)
}
