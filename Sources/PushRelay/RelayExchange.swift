import PushHTTP
import PushProviders
import PushTransports

/// The relay's way of sending a provider request: one try on the shared HTTP/2 client within
/// what is left of the push's deadline (none left: `timeout`, nothing sent). No retries, no
/// backoff: the relay does not queue, the hub that asked is the one that retries. The one
/// exception is a stream the provider refused unprocessed (REFUSED_STREAM, or above a GOAWAY's
/// last stream): it is sent once more at once, within the same deadline, since it cannot have
/// been delivered (the HTTP client itself resends nothing).
struct RelayExchange: ProviderExchange {
    let client: HTTPClient
    let deadline: ContinuousClock.Instant

    func exchange(_ request: HTTPRequest, parse: (HTTPResponse) -> ProviderAnswer) async -> ProviderExchangeResult {
        let clock = ContinuousClock()
        let start = clock.now
        guard let (result, attempts) = await client.sendResendingRefused(request, deadline: deadline) else { return .declined(.timeout) }
        let answer: ProviderAnswer
        switch result {
        case .success(let response): answer = parse(response)
        case .failure(let error): answer = error.unanswered
        }
        return ProviderExchangeResult(answer: answer, attempts: attempts, latency: start.duration(to: clock.now))
    }
}
