package import PushEnvelope

/// The VAPID pair in settings.json, key `vapidKeys`, in the `web-push` package's format
/// (`{"publicKey","privateKey"}`, URL-safe base64 without padding of the 65-byte point and the
/// 32-byte scalar), shared with the JavaScript hub: an existing pair is read and never
/// replaced (every browser subscribed with its public key); a missing one is generated and
/// saved on first use. Failing to save is a warning: this run uses the new pair.
///
/// A rotation (`rotate`) makes a new pair the `vapidKeys` the JavaScript hub reads and keeps the
/// pairs it replaced, newest first, under `previousVapidKeys` (a key the JavaScript hub does not
/// read): browsers subscribed with an old public key are still reached with its pair until
/// `dropPrevious` ends the grace.
package enum VAPIDKeyFile {
    /// The settings.json member of the pairs a rotation replaced.
    package static let previousMember = "previousVapidKeys"
    /// Pairs kept at most: each costs one more request for a refused push.
    package static let previousLimit = 4

    package struct Loaded {
        package let keyPair: WebPushP256Key?
        /// The pair was generated now.
        package let created: Bool
        /// For the operator (never holds key material).
        package let warning: String?
        /// The pairs a rotation replaced, newest first (empty unless rotated).
        package var previous: [WebPushP256Key] = []

        init(keyPair: WebPushP256Key?, created: Bool, warning: String?, previous: [WebPushP256Key] = []) {
            self.keyPair = keyPair
            self.created = created
            self.warning = warning
            self.previous = previous
        }
    }

    /// What a rotation did.
    package struct Rotation: Sendable {
        /// The public key `vapid-public-key` serves from now on.
        package let publicKey: String
        /// The public keys kept for browsers not yet subscribed again, newest first.
        package let previousPublicKeys: [String]
    }

    /// The usable pairs of a `previousVapidKeys` member, and whether any entry was not one.
    package static func previousPairs(from value: JSONValue?) -> (pairs: [WebPushP256Key], unusable: Bool) {
        guard let value else { return ([], false) }
        guard case .array(let entries) = value else { return ([], true) }
        let pairs = entries.compactMap(keyPair(from:))
        return (pairs, pairs.count != entries.count)
    }

    static func member(_ pair: WebPushP256Key, retiredAt: Int64? = nil) -> JSONValue? {
        guard let scalar = pair.privateScalar() else { return nil }
        var members: [(key: String, value: JSONValue)] = [
            (key: "publicKey", value: .string(Base64.urlEncodeUnpadded(pair.publicKey))),
            (key: "privateKey", value: .string(Base64.urlEncodeUnpadded(scalar))),
        ]
        if let retiredAt { members.append((key: "retiredAt", value: .integer(retiredAt))) }
        return .object(members)
    }

    /// Generates a new pair and makes it `vapidKeys`; the pair it replaces goes first into
    /// `previousVapidKeys` (at most `previousLimit` kept, the oldest dropped). With no usable
    /// pair in the file there is nothing to keep: the new pair is simply saved.
    package static func rotate(_ file: SettingsFile, now: Int64) throws(PushSettingsFileError) -> Rotation {
        let generated: WebPushP256Key
        do {
            generated = try WebPushP256Key.generate()
        } catch {
            throw PushSettingsFileError.unwritable.with("\(error.message): the VAPID keys were not rotated")
        }
        guard let newMember = member(generated) else {
            throw PushSettingsFileError.unwritable.with("OpenSSL could not export the new VAPID key: the VAPID keys were not rotated")
        }
        let rotation = try file.replaceValues { (members) throws(PushSettingsFileError) -> (values: [String: JSONValue?], result: Rotation)? in
            let object = JSONValue.object(members)
            if let stored = object["vapidKeys"], keyPair(from: stored) == nil {
                throw PushSettingsFileError.unparseable.with(
                    "settings.json \"vapidKeys\" is not a P-256 pair in the web-push package's format: fix or remove it first; nothing was rotated")
            }
            var kept: [JSONValue] = []
            if let stored = object["vapidKeys"], let pair = keyPair(from: stored), let retired = member(pair, retiredAt: now) { kept.append(retired) }
            if case .array(let earlier)? = object[previousMember] { kept += earlier.filter { keyPair(from: $0) != nil } }
            kept = Array(kept.prefix(previousLimit))
            let previous = kept.compactMap { $0["publicKey"]?.stringValue }
            return (
                ["vapidKeys": newMember, previousMember: kept.isEmpty ? nil : .array(kept)],
                Rotation(publicKey: Base64.urlEncodeUnpadded(generated.publicKey), previousPublicKeys: previous)
            )
        }
        guard let rotation else { throw PushSettingsFileError.unwritable.with("the VAPID keys were not rotated") }
        return rotation
    }

    /// Removes `previousVapidKeys`: browsers still subscribed with an old key are no longer
    /// reached. Returns the public keys dropped.
    package static func dropPrevious(_ file: SettingsFile) throws(PushSettingsFileError) -> [String] {
        try file.replaceValues { (members) throws(PushSettingsFileError) -> (values: [String: JSONValue?], result: [String])? in
            guard let stored = JSONValue.object(members)[previousMember] else { return nil }
            let dropped: [String]
            if case .array(let entries) = stored { dropped = entries.compactMap { $0["publicKey"]?.stringValue } } else { dropped = [] }
            return ([previousMember: nil], dropped)
        } ?? []
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
            let previous = previousPairs(from: JSONValue.object(members)[previousMember])
            return Loaded(
                keyPair: pair, created: false,
                warning: previous.unusable ? "settings.json \"\(previousMember)\" holds an entry that is not a P-256 pair: it is ignored" : nil,
                previous: previous.pairs)
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
