package import PushProviders

/// What one exchange found: the last answer read, the HTTP attempts made for it, and the time
/// from the first attempt to that answer.
package struct ProviderExchangeResult: Sendable {
    package var answer: ProviderAnswer
    package var attempts: Int
    package var latency: Duration

    package init(answer: ProviderAnswer, attempts: Int, latency: Duration) {
        self.answer = answer
        self.attempts = attempts
        self.latency = latency
    }

    /// Nothing was sent, for `reason`.
    package static func declined(_ reason: PushDeliveryReason) -> ProviderExchangeResult {
        ProviderExchangeResult(answer: .unanswered(reason, notProcessed: true), attempts: 0, latency: .zero)
    }
}
