import PushEnvelope

/// What direct APNs needs from the operator: the `.p8` provider key and its ids. Loaded and
/// checked once, so a broken key is reported at start-up, not at the first push.
public struct APNsCredentials: Sendable, CustomStringConvertible {
    public let keyPath: String
    public let keyId: String
    public let teamId: String
    public let bundleId: String
    package let signingKey: JWTSigningKey

    /// Reads `keyPath` and checks it is a PKCS#8 P-256 private key.
    public init(keyPath: String, keyId: String, teamId: String, bundleId: String) throws(PushCredentialError) {
        let pem = try JWTSigningKey.readFile(keyPath, setting: "APNS_KEY_P8_PATH")
        self.signingKey = try JWTSigningKey(pem: pem, algorithm: .es256, source: "APNS_KEY_P8_PATH (\(keyPath))")
        self.keyPath = keyPath
        self.keyId = keyId
        self.teamId = teamId
        self.bundleId = bundleId
    }

    /// For tests and embedders that hold the PEM in memory.
    public init(pem: [UInt8], keyId: String, teamId: String, bundleId: String) throws(PushCredentialError) {
        self.signingKey = try JWTSigningKey(pem: pem, algorithm: .es256, source: "APNs key")
        self.keyPath = "(in memory)"
        self.keyId = keyId
        self.teamId = teamId
        self.bundleId = bundleId
    }

    public var description: String {
        "APNsCredentials(keyPath: \(keyPath), keyId: \(keyId), teamId: \(teamId), bundleId: \(bundleId), key: redacted)"
    }
}
