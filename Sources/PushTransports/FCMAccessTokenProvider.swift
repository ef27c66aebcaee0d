package import PushHTTP
import PushEnvelope

/// The OAuth access token for FCM HTTP v1: an RS256 JWT assertion from the service account,
/// exchanged at the token URI, cached until 60 seconds before it expires, refreshed single
/// flight (concurrent callers share one exchange).
package actor FCMAccessTokenProvider {
    /// The scope FCM HTTP v1 requires.
    package static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    private let account: FCMServiceAccount
    private let client: HTTPClient
    private let now: @Sendable () -> Double
    private var cached: (token: String, expiresAt: Double)?
    private var inFlight: Task<String, any Error>?
    /// Exchanges performed (for tests and diagnostics).
    package private(set) var exchangeCount = 0

    package init(account: FCMServiceAccount, client: HTTPClient, now: @escaping @Sendable () -> Double = WallClock.seconds) {
        self.account = account
        self.client = client
        self.now = now
    }

    /// A valid access token, exchanging a new assertion when needed.
    package func token() async throws(FCMAuthError) -> String {
        if let cached, now() < cached.expiresAt - 60 { return cached.token }
        if let inFlight { return try await Self.await(inFlight) }
        let task = Task { try await self.exchange() }
        inFlight = task
        defer { inFlight = nil }
        return try await Self.await(task)
    }

    /// Forgets the cached token after FCM answered 401, so the next batch exchanges anew.
    package func invalidate(_ token: String) {
        if cached?.token == token { cached = nil }
    }

    private static func await(_ task: Task<String, any Error>) async throws(FCMAuthError) -> String {
        do {
            return try await task.value
        } catch let error as FCMAuthError {
            throw error
        } catch {
            throw FCMAuthError(message: "token exchange failed: \(error)")
        }
    }

    private func exchange() async throws -> String {
        exchangeCount += 1
        let issuedAt = Int64(now().rounded(.down))
        let assertion: String
        do {
            assertion = try JSONWebToken.sign(
                header: ["alg": "RS256", "typ": "JWT"],
                claims: [
                    "iss": .string(account.clientEmail), "sub": .string(account.clientEmail), "aud": .string(account.tokenURI),
                    "scope": .string(Self.scope), "iat": .integer(issuedAt), "exp": .integer(issuedAt + 3600),
                ], key: account.signingKey)
        } catch {
            throw FCMAuthError(message: "cannot sign the OAuth assertion: \(error.message)")
        }
        let form = "grant_type=" + Self.formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion=" + Self.formEncode(assertion)
        let request = HTTPRequest(
            method: .post, url: account.tokenURI, headers: ["content-type": "application/x-www-form-urlencoded"], body: Array(form.utf8))
        let response: HTTPResponse
        do {
            response = try await client.send(request)
        } catch {
            throw FCMAuthError(message: "token endpoint unreachable: \(error)")
        }
        let object = ProviderCall.jsonObject(response.body)
        guard (200...299).contains(response.status), let token = object?["access_token"]?.stringValue, !token.isEmpty else {
            let code = object?["error"]?.stringValue.map(ProviderCall.code) ?? "http_\(response.status)"
            let description =
                object?["error_description"]?.stringValue.map {
                    ": " + SafeText.sanitize($0, limit: 200, redactingTokens: true, secrets: [assertion])
                } ?? ""
            throw FCMAuthError(message: "Google refused the service account (\(code)\(description))", status: response.status)
        }
        let lifetime: Double
        switch object?["expires_in"] {
        case .integer(let seconds)?: lifetime = Double(seconds)
        case .double(let seconds)?: lifetime = seconds
        default: lifetime = 3600
        }
        cached = (token, now() + lifetime)
        return token
    }

    /// `application/x-www-form-urlencoded` value encoding.
    static func formEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

/// Why no FCM access token could be had. Carries Google's error code and description, never
/// the assertion or a token.
package struct FCMAuthError: Error, Sendable, CustomStringConvertible {
    package let message: String
    package let status: Int?

    init(message: String, status: Int? = nil) {
        self.message = message
        self.status = status
    }

    package var description: String { message }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
