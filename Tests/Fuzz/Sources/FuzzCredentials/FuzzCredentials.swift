import Foundation
import FuzzCheck
import PushEnvelope
import PushTransports

/// Real keys, made once per process with the `openssl` command (none is ever committed): a
/// P-256 and an RSA-2048 PKCS#8 PEM, for inputs that splice fields around a usable key.
let keys: (p256: String, rsa: String) = {
    func generate(_ arguments: [String]) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["genpkey"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { violated("cannot run openssl: \(error)") }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
    return (
        generate(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
        generate(["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
    )
}()

/// The first byte chooses how the rest is read:
/// - 0: an APNs `.p8` PEM;
/// - 1: a service-account JSON;
/// - 2: a service account with the real RSA key, the rest split at newlines into `project_id`,
///   `client_email` and `token_uri`;
/// - 3: the rest prepended to the real P-256 key's body (headers such as `Proc-Type`).
/// Besides not crashing or prompting (a prompt blocks: libFuzzer's timeout catches it): an
/// accepted account's `token_uri` is https; neither a description nor an error ever holds key
/// material; an error message is bounded.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 4 {
    case 0:
        apns(rest, key: nil)
    case 1:
        account(rest, key: nil)
    case 2:
        let fields = String(decoding: rest, as: UTF8.self).split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false)
        var members: [(key: String, value: JSONValue)] = [("type", "service_account"), ("private_key", .string(keys.rsa))]
        for (name, value) in zip(["project_id", "client_email", "token_uri"], fields) { members.append((name, .string(String(value)))) }
        account(JSONValue.object(members).canonicalBytes, key: keys.rsa)
    default:
        let lines = keys.p256.split(separator: "\n", omittingEmptySubsequences: false)
        let spliced = [String(lines.first ?? ""), String(decoding: rest, as: UTF8.self)] + lines.dropFirst().map(String.init)
        apns(Array(spliced.joined(separator: "\n").utf8), key: keys.p256)
    }
    return 0
}

func apns(_ pem: [UInt8], key: String?) {
    do {
        let credentials = try APNsCredentials(pem: pem, keyId: "K", teamId: "T", bundleId: "b.id")
        requireNoKey(credentials.description, "APNs description", key: key)
    } catch {
        requireNoKey(error.message, "APNs error", key: key)
        require(error.message.count <= 2_000, "APNs error is unbounded: \(error.message.count) characters")
    }
}

func account(_ json: [UInt8], key: String?) {
    do {
        let account = try FCMServiceAccount(json: json)
        require(account.tokenURI.lowercased().hasPrefix("https://"), "accepted a cleartext token_uri: \(account.tokenURI)")
        requireNoKey(account.description, "service-account description", key: key)
    } catch {
        requireNoKey(error.message, "service-account error", key: key)
        require(error.message.count <= 2_000, "service-account error is unbounded: \(error.message.count) characters")
    }
}

/// No line of the real key's base64 body appears in `text`.
/// Every body line is a run of at least 40 base64 characters, so a text without such a run holds
/// none (most texts: checked without searching for each line).
func requireNoKey(_ text: String, _ what: String, key: String?) {
    guard let key, holdsBase64Run(text, atLeast: 40) else { return }
    for line in key.split(separator: "\n") where line.count >= 40 && !line.hasPrefix("-----") {
        require(!text.contains(line), "\(what) holds key material: \(text)")
    }
}

func holdsBase64Run(_ text: String, atLeast minimum: Int) -> Bool {
    var run = 0
    for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
            run += 1
            if run >= minimum { return true }
        case 0xC0...:
            // A non-ASCII character, which `String.contains` may match to an ASCII one (U+212A
            // KELVIN SIGN is "K"): counted as one of the run (its continuation bytes are not).
            run += 1
            if run >= minimum { return true }
        case 0x80...0xBF:
            continue
        default:
            run = 0
        }
    }
    return false
}
