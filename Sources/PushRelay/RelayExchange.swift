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
        var attempts = 0
        var answer = ProviderAnswer.unanswered(.timeout, notProcessed: true)
        while attempts < 2 {
            let remaining = deadline - clock.now
            guard remaining > .milliseconds(1) else { break }
            var request = request
            request.timeout = remaining
            attempts += 1
            do {
                answer = parse(try await client.send(request))
            } catch {
                answer = error.unanswered
            }
            guard answer.isRefusedStream, !Task.isCancelled else { break }
        }
        if attempts == 0 { return .declined(.timeout) }
        return ProviderExchangeResult(answer: answer, attempts: attempts, latency: start.duration(to: clock.now))
    }
}
