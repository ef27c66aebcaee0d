import PushEnvelope

/// Google's OAuth 2.0 service-account flow for FCM, without the exchange itself: the RS256
/// assertion, the form that carries it, and the reading of the token endpoint's answer.
/// `FCMAccessTokenProvider` (PushTransports) posts the form and caches the token.
package enum FCMOAuth {
    /// The scope FCM HTTP v1 requires.
    package static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    /// The signed JWT assertion: issued now, valid for an hour, for `tokenURI`.
    package static func assertion(clientEmail: String, tokenURI: String, key: JWTSigningKey, issuedAt: Int64) throws(FCMAuthError) -> String {
        do {
            return try JSONWebToken.sign(
                header: ["alg": "RS256", "typ": "JWT"],
                claims: [
                    "iss": .string(clientEmail), "sub": .string(clientEmail), "aud": .string(tokenURI),
                    "scope": .string(scope), "iat": .integer(issuedAt), "exp": .integer(issuedAt + 3600),
                ], key: key)
        } catch {
            throw FCMAuthError(message: "cannot sign the OAuth assertion: \(error.message)")
        }
    }

    /// The `application/x-www-form-urlencoded` body of the exchange.
    package static func form(assertion: String) -> [UInt8] {
        Array(("grant_type=" + formEncode("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion=" + formEncode(assertion)).utf8)
    }

    package static let contentType = "application/x-www-form-urlencoded"

    /// The access token and its lifetime in seconds (an hour when Google does not say), or
    /// why not: Google's `error` and `error_description`, sanitized, never the assertion.
    package static func parse(status: Int, body: [UInt8], assertion: String) throws(FCMAuthError) -> (token: String, lifetime: Double) {
        let object = ProviderText.jsonObject(body)
        guard (200...299).contains(status), let token = object?["access_token"]?.stringValue, !token.isEmpty else {
            let code = object?["error"]?.stringValue.map(ProviderText.code) ?? "http_\(status)"
            let description =
                object?["error_description"]?.stringValue.map {
                    ": " + SafeText.sanitize($0, limit: 200, redactingTokens: true, secrets: [assertion])
                } ?? ""
            throw FCMAuthError(message: "Google refused the service account (\(code)\(description))", status: status)
        }
        switch object?["expires_in"] {
        case .integer(let seconds)?: return (token, Double(seconds))
        case .double(let seconds)?: return (token, seconds)
        default: return (token, 3600)
        }
    }

    /// `application/x-www-form-urlencoded` value encoding.
    package static func formEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count < 2 ? "0" + hex : hex)
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

    package init(message: String, status: Int? = nil) {
        self.message = message
        self.status = status
    }

    package var description: String { message }
}
