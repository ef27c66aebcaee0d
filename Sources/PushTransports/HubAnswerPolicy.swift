package import PushProviders

/// What a provider's answer means to the hub: prune, keep or retry. The relay reads the same
/// answers its own way (`RelayProviderOutcome`), so this policy lives beside the hub's caller,
/// not in the parsers.
package enum HubAnswerPolicy {
    /// Sent on acceptance, invalid (prune the registration) only on the provider's explicit word
    /// that the token is dead, failed (keep it) on everything else.
    package static func outcome(_ answer: ProviderAnswer) -> PushDeliveryOutcome {
        switch answer.said {
        case .accepted: .sent
        case .tokenDead: .invalid
        case .providerTokenExpired, .throttled, .providerTokenUpdatesThrottled, .unavailable, .refused, .unanswered: .failed
        }
    }

    /// Whether the retry policy may send the same request again: when the provider throttles
    /// us or says it is passing trouble, or when no answer came and the request provably never
    /// reached it. Never for a dead token, a refusal, or a failure that may have delivered.
    package static func mayRetry(_ answer: ProviderAnswer) -> Bool {
        switch answer.said {
        case .throttled, .unavailable: true
        case .unanswered(let notProcessed): notProcessed
        case .accepted, .tokenDead, .providerTokenExpired, .providerTokenUpdatesThrottled, .refused: false
        }
    }

    /// For a dead token: when the provider says it died, so a registration refreshed after that
    /// moment is kept.
    package static func invalidSince(_ answer: ProviderAnswer) -> Int64? {
        if case .tokenDead(let since) = answer.said { return since }
        return nil
    }
}
