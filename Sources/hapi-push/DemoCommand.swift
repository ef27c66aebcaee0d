import PushNative

/// `hapi-push demo`: shows the envelope the official iOS app decrypts, sealed and reopened
/// here with no network and no credentials.
enum DemoCommand {
    static func run(_ arguments: [String]) throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print("Usage: hapi-push demo\n\nSeals the golden-vector payload with key 00..1f and nonce 00..0b, then opens it as a device would.")
            return ExitCode.success.rawValue
        }
        guard arguments.isEmpty else { throw UsageError("demo takes no options") }
        let key = try PushKey(bytes: Array(0..<32))
        let nonce: [UInt8] = Array(0..<12)
        let payload = NotificationPayload(
            type: .ready, sessionId: "s1", title: "HAPI", body: "Ready for input")
        let plaintext = payload.canonicalJSON
        print("== The golden envelope (key 00..1f, nonce 00..0b, AAD \"hapi-push-v1\") ==")
        print("payload (canonical JSON): \(String(decoding: plaintext, as: UTF8.self))")
        let golden = try PushEnvelope.seal(plaintext, key: key, testVectorNonce: nonce)
        print("envelope:                 \(golden)")
        print("envelope length:          \(golden.utf8.count) bytes (cap \(PushEnvelope.maximumEnvelopeLength))")
        let opened = try ReceivedPush.decode(version: "1", envelope: golden, key: key)
        print("device decrypts:          type=\(opened.type) sessionId=\(opened.sessionId) title=\"\(opened.title)\" body=\"\(opened.body)\"")
        print("")
        print("== A real seal uses a fresh random nonce every time ==")
        let deviceKey = try PushKey.generate()
        let first = try PushEnvelope.seal(plaintext, key: deviceKey)
        let second = try PushEnvelope.seal(plaintext, key: deviceKey)
        print("seal #1: \(first.prefix(32))...")
        print("seal #2: \(second.prefix(32))...  (differs: \(first != second))")
        do {
            _ = try PushEnvelope.open(first, key: key)
            print("opening with the wrong key: unexpectedly succeeded")
            return ExitCode.failure.rawValue
        } catch {
            print("opening with the wrong key: refused (\(error.message))")
        }
        return ExitCode.success.rawValue
    }
}
