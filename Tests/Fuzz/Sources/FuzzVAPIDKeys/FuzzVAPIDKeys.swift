import Foundation
import FuzzCheck
import PushEnvelope
import PushNative

/// One scratch data directory per process; each input is written as its settings.json.
let directory: String = {
    let path = NSTemporaryDirectory() + "hapi-fuzz-vapid-\(getpid())"
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}()
let settingsPath = directory + "/settings.json"

/// The input is settings.json as the VAPID key file reads it. Besides not crashing: a file that
/// has a `vapidKeys` member is never written (an existing pair, even an unusable one, is never
/// replaced); a pair is used only when both halves decode and belong together, and then it is
/// the file's; a warning never carries the private key's text; a file with no member gets a
/// new pair saved, which the next load reads back unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Data(bytes: data, count: size)
    try! input.write(to: URL(fileURLWithPath: settingsPath))
    let file = SettingsFile(directory: directory)
    let members = try? file.read()
    let stored = members.flatMap { JSONValue.object($0)["vapidKeys"] }
    let loaded = VAPIDKeyFile.loadOrCreate(file)
    if let warning = loaded.warning, let secret = stored?["privateKey"]?.stringValue, secret.count >= 8 {
        require(!warning.contains(secret), "a warning shows the private key")
    }
    guard let members else {
        require(loaded.keyPair == nil && FileManager.default.contents(atPath: settingsPath) == input, "an unreadable file was used or written")
        return 0
    }
    if let stored {
        require(FileManager.default.contents(atPath: settingsPath) == input, "settings.json with vapidKeys was modified")
        require(!loaded.created, "a pair created over an existing member")
        let expected = VAPIDKeyFile.keyPair(from: stored)
        require((loaded.keyPair == nil) == (expected == nil), "the pair used is not the file's")
        if let pair = loaded.keyPair, let expected {
            require(pair.publicKey == expected.publicKey, "another public key than the file's")
            require(stored["publicKey"]?.stringValue.flatMap(Base64.urlDecode) == pair.publicKey, "the public key is not the member's")
        }
    } else {
        guard let pair = loaded.keyPair else { violated("no pair for a readable file without one: \(loaded.warning ?? "")") }
        require(loaded.created, "a pair appeared without being created")
        let again = VAPIDKeyFile.loadOrCreate(file)
        require(!again.created && again.keyPair?.publicKey == pair.publicKey, "the saved pair does not read back")
        let after = (try? file.read()) ?? []
        let before = Set(members.map(\.key))
        require(Set(after.map(\.key)) == before.union(["vapidKeys"]), "other members changed while saving the pair")
    }
    return 0
}
