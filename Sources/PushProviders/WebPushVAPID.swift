package import PushEnvelope

/// The application server's identity towards Web Push services (RFC 8292): the VAPID key pair
/// and subject, and the `Authorization: vapid t=…, k=…` header, whose ES256 JWT is minted per
/// push-service origin (`aud`) for 12 hours and reused until it is within an hour of expiry.
/// Holds a private key: `description` never shows it. An actor: signing never suspends, so
/// concurrent sends to one origin mint once.
package actor WebPushVAPID: CustomStringConvertible {
    /// How long a token is valid (RFC 8292 allows at most 24 hours; the `web-push` package's 12).
    package static let lifetime: Int64 = 12 * 3600
    /// A cached token is replaced once it is this close to expiry.
    package static let renewBefore: Int64 = 3600
    /// Origins remembered at most (a hub talks to a handful of push services).
    static let cacheLimit = 256

    /// The public key, URL-safe base64 without padding, as browsers subscribe with it.
    package nonisolated let publicKey: String
    package nonisolated let subject: String
    private let signer: JWTSigningKey
    private let now: @Sendable () -> Int64
    private var cache: [String: (header: String, expires: Int64)] = [:]
    /// Tokens minted (for tests).
    package private(set) var mintCount = 0

    /// - Parameter now: seconds since 1970.
    package init(keyPair: WebPushP256Key, subject: String, now: @escaping @Sendable () -> Int64 = { Int64(WallClock.seconds()) }) {
        publicKey = Base64.urlEncodeUnpadded(keyPair.publicKey)
        self.subject = subject
        signer = JWTSigningKey(vapid: keyPair)
        self.now = now
    }

    package nonisolated var description: String { "WebPushVAPID(\(publicKey), \(subject), private key redacted)" }

    /// The `Authorization` header value for a push service `origin` (`https://host[:port]`).
    package func authorization(origin: String) throws(PushCredentialError) -> String {
        let time = now()
        if let cached = cache[origin], cached.expires - time > Self.renewBefore {
            return cached.header
        }
        let expires = time + Self.lifetime
        // The `web-push` package's header order; claims in its order (aud, exp, sub).
        let header = Base64.urlEncodeUnpadded(Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8))
        let claims: JSONValue = .object([(key: "aud", value: .string(origin)), (key: "exp", value: .integer(expires)), (key: "sub", value: .string(subject))])
        let signingInput = header + "." + Base64.urlEncodeUnpadded(Array(claims.javaScriptString.utf8))
        let signature = try signer.sign(Array(signingInput.utf8))
        let value = "vapid t=\(signingInput).\(Base64.urlEncodeUnpadded(signature)), k=\(publicKey)"
        if cache.count >= Self.cacheLimit { cache.removeAll() }
        cache[origin] = (value, expires)
        mintCount += 1
        return value
    }

    /// Whether `subject` is what push services accept (Apple refuses others with
    /// `BadJwtToken`): a `mailto:` address or an `https:` URL with a host.
    package nonisolated static func isValidSubject(_ subject: String) -> Bool {
        let lower = subject.lowercased()
        guard subject.utf8.count <= 1024, subject.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return false }
        if lower.hasPrefix("mailto:") {
            let address = subject.dropFirst(7)
            guard let at = address.firstIndex(of: "@") else { return false }
            return at != address.startIndex && address.index(after: at) != address.endIndex
        }
        if lower.hasPrefix("https://") {
            let rest = subject.dropFirst(8)
            let host = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            return !host.isEmpty && !host.contains("@")
        }
        return false
    }
}
