import PushHTTP
import PushProviders
import PushTransports

/// The relay's way of sending a provider request: one try on the shared HTTP/2 client within
/// what is left of the push's deadline (none left: `timeout`, nothing sent). No retries, no
/// backoff: the relay does not queue, the hub that asked is the one that retries.
struct RelayExchange: ProviderExchange {
    let client: HTTPClient
    let deadline: ContinuousClock.Instant

    func exchange(_ request: HTTPRequest, parse: (HTTPResponse) -> ProviderAnswer) async -> ProviderExchangeResult {
        let clock = ContinuousClock()
        let start = clock.now
        let remaining = deadline - start
        guard remaining > .milliseconds(1) else { return .declined(.timeout) }
        var request = request
        request.timeout = remaining
        let answer: ProviderAnswer
        do {
            answer = parse(try await client.send(request))
        } catch {
            answer = error.unanswered
        }
        return ProviderExchangeResult(answer: answer, attempts: 1, latency: start.duration(to: clock.now))
    }
}
