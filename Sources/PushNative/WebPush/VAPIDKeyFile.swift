package import PushEnvelope

/// The VAPID pair in settings.json, key `vapidKeys`, in the `web-push` package's format
/// (`{"publicKey","privateKey"}`, URL-safe base64 without padding of the 65-byte point and the
/// 32-byte scalar), shared with the JavaScript hub: an existing pair is read and never
/// replaced (every browser subscribed with its public key); a missing one is generated and
/// saved on first use. Failing to save is a warning: this run uses the new pair.
package enum VAPIDKeyFile {
    package struct Loaded {
        package let keyPair: WebPushP256Key?
        /// The pair was generated now.
        package let created: Bool
        /// For the operator (never holds key material).
        package let warning: String?
    }

    /// The pair in a `vapidKeys` member; nil unless both keys decode and belong together.
    package static func keyPair(from value: JSONValue) -> WebPushP256Key? {
        guard let publicText = value["publicKey"]?.stringValue, let privateText = value["privateKey"]?.stringValue,
            let point = Base64.urlDecode(publicText), let scalar = Base64.urlDecode(privateText)
        else { return nil }
        return WebPushP256Key.keyPair(privateScalar: scalar, publicKey: point)
    }

    /// Reads the pair, generating and saving one when settings.json has none.
    package static func loadOrCreate(_ file: SettingsFile?) -> Loaded {
        guard let file else {
            return Loaded(keyPair: nil, created: false, warning: "no data directory for settings.json (set HAPI_HOME or HOME): Web Push is off")
        }
        let members: [(key: String, value: JSONValue)]
        do {
            members = try file.read()
        } catch {
            return Loaded(keyPair: nil, created: false, warning: "\(error.message); Web Push is off")
        }
        if let stored = JSONValue.object(members)["vapidKeys"] {
            guard let pair = keyPair(from: stored) else {
                return Loaded(
                    keyPair: nil, created: false,
                    warning: "settings.json \"vapidKeys\" is not a P-256 pair in the web-push package's format: Web Push is off; the file is left untouched")
            }
            return Loaded(keyPair: pair, created: false, warning: nil)
        }
        let generated: WebPushP256Key
        do {
            generated = try WebPushP256Key.generate()
        } catch {
            return Loaded(keyPair: nil, created: false, warning: "\(error.message): Web Push is off")
        }
        guard let scalar = generated.privateScalar() else {
            return Loaded(keyPair: nil, created: false, warning: "OpenSSL could not export the new VAPID key: Web Push is off")
        }
        let value: JSONValue = .object([
            (key: "publicKey", value: .string(Base64.urlEncodeUnpadded(generated.publicKey))),
            (key: "privateKey", value: .string(Base64.urlEncodeUnpadded(scalar))),
        ])
        do {
            let added = try file.addMissingValues(["vapidKeys": value])
            if added.isEmpty {
                // Another process saved a pair between our read and our write: theirs wins.
                let again = try file.read()
                if let stored = JSONValue.object(again)["vapidKeys"], let pair = keyPair(from: stored) {
                    return Loaded(keyPair: pair, created: false, warning: nil)
                }
                return Loaded(keyPair: nil, created: false, warning: "settings.json \"vapidKeys\" is unusable: Web Push is off")
            }
            return Loaded(keyPair: generated, created: true, warning: nil)
        } catch {
            return Loaded(
                keyPair: generated, created: true,
                warning: "\(error.message); the new VAPID key pair applies to this run only, so browsers subscribed now must subscribe again after a restart: make the data directory writable")
        }
    }
}
