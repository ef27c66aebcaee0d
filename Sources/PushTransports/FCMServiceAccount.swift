import PushEnvelope
import PushHTTP

/// A Google service account for direct FCM: the project to send in and the key that signs the
/// OAuth assertion. Loaded once; missing fields are named.
public struct FCMServiceAccount: Sendable, CustomStringConvertible {
    /// Google's token endpoint, used when the file has no `token_uri`.
    public static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    public let path: String
    public let projectId: String
    public let clientEmail: String
    public let tokenURI: String
    let signingKey: JWTSigningKey

    /// Reads and checks the service-account JSON at `path`.
    public init(contentsOfFile path: String) throws(PushCredentialError) {
        let bytes = try JWTSigningKey.readFile(path, setting: "FCM_SERVICE_ACCOUNT_PATH")
        try self.init(json: bytes, source: "FCM_SERVICE_ACCOUNT_PATH (\(path))", path: path)
    }

    /// Parses service-account JSON held in memory.
    public init(json bytes: [UInt8], source: String = "service account", path: String = "(in memory)") throws(PushCredentialError) {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw PushCredentialError.malformed.with("\(source) is not valid JSON (\(error.description)): download the key file again")
        }
        guard value.objectValue != nil else {
            throw PushCredentialError.malformed.with("\(source) must be a JSON object (a Google service-account key file)")
        }
        let required = ["project_id", "client_email", "private_key"]
        let object = value
        let missing = required.filter { (object[$0]?.stringValue ?? "").isEmpty }
        guard missing.isEmpty else {
            throw PushCredentialError.missingFields.with("\(source) lacks \(missing.joined(separator: ", ")): use the key file of a service account")
        }
        let privateKey = object["private_key"]?.stringValue ?? ""
        self.signingKey = try JWTSigningKey(pem: Array(privateKey.utf8), algorithm: .rs256, source: source)
        self.path = path
        self.projectId = object["project_id"]?.stringValue ?? ""
        self.clientEmail = object["client_email"]?.stringValue ?? ""
        let tokenURI = object["token_uri"]?.stringValue ?? ""
        if !tokenURI.isEmpty {
            // The signed assertion goes there and the access token comes back: never in clear,
            // never anywhere a path could be spliced into.
            do {
                _ = try HTTPBaseURL(tokenURI, cleartext: .never)
            } catch {
                let shown = SafeText.sanitize(HTTPBaseURL.redactingPassword(tokenURI), limit: 120)
                let code: PushCredentialError = error.message.hasPrefix("must use https") ? .insecure : .malformed
                throw code.with("\(source): token_uri \"\(shown)\" \(error.message)")
            }
        }
        self.tokenURI = tokenURI.isEmpty ? FCMServiceAccount.defaultTokenURI : tokenURI
    }

    public var description: String {
        "FCMServiceAccount(path: \(path), projectId: \(projectId), clientEmail: \(clientEmail), privateKey: redacted)"
    }
}
