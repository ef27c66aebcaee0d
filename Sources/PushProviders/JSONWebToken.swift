package import PushEnvelope

/// Compact JWS serialization: `base64url(header).base64url(claims).base64url(signature)`.
package enum JSONWebToken {
    package static func sign(header: JSONValue, claims: JSONValue, key: JWTSigningKey) throws(PushCredentialError) -> String {
        let signingInput = Base64.urlEncodeUnpadded(header.canonicalBytes) + "." + Base64.urlEncodeUnpadded(claims.canonicalBytes)
        let signature = try key.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64.urlEncodeUnpadded(signature)
    }
}
