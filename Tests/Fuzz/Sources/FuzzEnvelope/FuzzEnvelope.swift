import FuzzCheck
import PushEnvelope

/// The golden vector's key (00..1f) and nonce (00..0b), from shared/fixtures/push/envelope-v1.json.
let key = try! PushKey(bytes: Array(0..<32))
let nonce: [UInt8] = Array(0..<12)

/// Each input is used twice:
/// 1. as a received envelope (the golden envelope is a seed): open and decode never crash.
/// 2. as a plaintext the hub seals: opening gives it back, one flipped bit is refused, and the
///    device decodes a payload exactly when the plaintext is one, which round-trips.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))

    let received = String(decoding: input, as: UTF8.self)
    _ = try? PushEnvelopeCipher.open(received, key: key)
    _ = try? ReceivedPush.decode(version: "1", envelope: received, key: key)

    let envelope: String
    do {
        envelope = try PushEnvelopeCipher.seal(input, key: key, testVectorNonce: nonce)
        require(envelope.utf8.count == PushEnvelopeCipher.sealedLength(plaintextCount: size), "sealedLength is wrong")
        let opened = try PushEnvelopeCipher.open(envelope, key: key)
        require(opened == input, "open(seal(x)) != x")
    } catch {
        violated("sealing or opening \(size) bytes failed: \(error)")
    }

    var tampered = try! Base64.decode(envelope)
    tampered[size % tampered.count] ^= 1 << (size % 8)
    do {
        _ = try PushEnvelopeCipher.open(Base64.encode(tampered), key: key)
        violated("a tampered envelope opened")
    } catch {
        require(error == .authenticationFailed, "tampering gave \(error)")
    }

    let expected = (try? JSONParser.parse(input)).flatMap { try? PushNotificationPayload(jsonObject: $0) }
    let decoded = try? ReceivedPush.decode(version: "1", envelope: envelope, key: key)
    require(decoded == expected, "device decoded \(String(describing: decoded)), expected \(String(describing: expected))")
    if let decoded {
        let again = try? PushNotificationPayload(jsonObject: JSONParser.parse(decoded.canonicalJSON))
        require(again == decoded, "payload does not round-trip through its canonical JSON")
    }
    return 0
}
