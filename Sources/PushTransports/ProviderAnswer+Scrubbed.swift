import PushEnvelope
package import PushProviders

extension ProviderAnswer {
    /// This answer with `secrets` (what we sent: the device token, the JWT or access token) and
    /// anything token-like redacted from its reason and detail, so that what a caller keeps of
    /// a provider's words never holds them. `code` stays as it came (a caller sanitizes it).
    package func scrubbed(secrets: [String]) -> ProviderAnswer {
        var answer = self
        if let reason {
            let scrubbed = SafeText.sanitize(reason.rawValue, limit: Int.max, redactingTokens: true, secrets: secrets)
            if scrubbed != reason.rawValue { answer.reason = PushDeliveryReason(rawValue: scrubbed) }
        }
        if let detail {
            let scrubbed = SafeText.sanitize(detail, limit: Int.max, redactingTokens: true, secrets: secrets)
            if scrubbed != detail { answer.detail = scrubbed }
        }
        return answer
    }
}
