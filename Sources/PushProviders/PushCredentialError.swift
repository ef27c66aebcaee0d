/// Why a provider credential (an APNs `.p8` key, an FCM service account) was refused. Names
/// the file and says what to do; never contains key material.
public struct PushCredentialError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Code: Sendable, Hashable { case unreadable, malformed, encrypted, wrongKeyType, missingFields, signingFailed, insecure }

    package let code: Code
    /// What is wrong and what to do.
    public let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func == (lhs: PushCredentialError, rhs: PushCredentialError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { message }

    /// The file could not be read.
    public static let unreadable = PushCredentialError(.unreadable, "credential file is unreadable")
    /// The file is not the PEM or JSON it should be.
    public static let malformed = PushCredentialError(.malformed, "credential file is malformed")
    /// The key is protected by a passphrase: never prompted for (a prompt would block start-up);
    /// the operator exports it without one.
    public static let encrypted = PushCredentialError(.encrypted, "credential key is encrypted")
    /// The credential would travel in clear: a service account's `token_uri` over `http://`
    /// to a host other than loopback.
    public static let insecure = PushCredentialError(.insecure, "credential would be sent in clear")
    /// The key is of the wrong algorithm or curve.
    public static let wrongKeyType = PushCredentialError(.wrongKeyType, "credential key has the wrong type")
    /// Required fields are missing from a service account.
    public static let missingFields = PushCredentialError(.missingFields, "credential file lacks required fields")
    /// OpenSSL refused to sign.
    public static let signingFailed = PushCredentialError(.signingFailed, "signing failed")

    package func with(_ message: String) -> PushCredentialError { PushCredentialError(code, message) }
}
