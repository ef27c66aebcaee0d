package import PushHTTP
import PushEnvelope
package import PushProviders
import PushSync

/// One provider request with everything around it that all three transports share: the
/// endpoint backoff, the retry policy, the mapping of network errors, and the latency.
struct ProviderCall: Sendable {
    let client: HTTPClient
    let policy: PushRetryPolicy
    let backoff: EndpointBackoff
    /// `hapi_push_requests_in_flight{transport}`: requests handed to the client, not yet answered.
    var inFlight: (any PushMeterHandler)? = nil

    /// The meter this call counts its requests in, when there is a metrics sink.
    static func inFlightMeter(_ metrics: (any PushMetricsFactory)?, transport: PushTransportName) -> (any PushMeterHandler)? {
        metrics?.makeMeter(label: "hapi_push_requests_in_flight", dimensions: [("transport", transport.rawValue)])
    }

    /// Sends `request`, classifying each answer with `classify`, retrying per the policy.
    func perform(_ request: HTTPRequest, parse: @Sendable (HTTPResponse) -> ProviderAnswer) async -> PushResult {
        await perform([request], parse: parse).first ?? PushResult(outcome: .failed, reason: .noResult)
    }

    /// Sends every request as one batch (one submission to the HTTP client, one suspension),
    /// classifies each answer, and sends the retryable ones again per the policy, together,
    /// after the longest wait any of them asks for. Results are in request order; each
    /// latency runs from the start of this call to that request's last answer.
    func perform(_ requests: [HTTPRequest], parse: @Sendable (HTTPResponse) -> ProviderAnswer) async -> [PushResult] {
        guard !requests.isEmpty else { return [] }
        let clock = ContinuousClock()
        let start = clock.now
        if backoff.isBackingOff(now: start) {
            return requests.map { _ in PushResult(outcome: .failed, reason: .endpointBackoff, attempts: 0) }
        }
        var results = [PushResult?](repeating: nil, count: requests.count)
        var todo = Array(requests.indices)
        var attempt = 0
        while !todo.isEmpty {
            attempt += 1
            let roundStart = clock.now
            inFlight?.increment(by: Double(todo.count))
            let outcomes = await client.send(todo.map { requests[$0] })
            inFlight?.decrement(by: Double(todo.count))
            var retry: [Int] = []
            var wait: Duration = .zero
            var reached = false
            var connectFailed = false
            for (index, outcome) in zip(todo, outcomes) {
                let answer: ProviderAnswer
                switch outcome.result {
                case .success(let response):
                    reached = true
                    answer = parse(response)
                case .failure(let error):
                    if error.isConnectFailure { connectFailed = true }
                    answer = error.unanswered
                }
                let latency = (roundStart - start) + outcome.elapsed
                results[index] = PushResult(answer, latency: latency, attempts: attempt)
                if answer.retryable, !Task.isCancelled,
                    let delay = policy.delay(afterAttempt: attempt, elapsed: latency, retryAfter: answer.retryAfter)
                {
                    retry.append(index)
                    wait = max(wait, delay)
                }
            }
            // One outage is one failure, however many requests it failed; any answer ends it.
            if reached {
                backoff.recordSuccess()
            } else if connectFailed {
                backoff.recordConnectFailure(now: clock.now, attemptStartedAt: roundStart)
            }
            todo = retry
            if !todo.isEmpty {
                do { try await Task.sleep(for: wait) } catch { break }  // cancelled: keep the last answers
            }
        }
        return results.map { $0 ?? PushResult(outcome: .failed, reason: .noResult) }
    }

    /// What a transport makes of one delivery before anything is sent: a request, or a local
    /// refusal (wrong content, a malformed token).
    enum Prepared {
        case send(HTTPRequest)
        case refuse(PushResult)
    }

    /// Prepares every delivery, sends the requests as one batch and returns one result per
    /// delivery, in order.
    ///
    /// A reason kept from an answer never holds what we sent: the delivery's token and
    /// `secrets` (the JWT or access token of the batch) are redacted from it.
    func perform(
        _ deliveries: [PushDelivery], secrets: [String] = [], prepare: (PushDelivery) -> Prepared,
        parse: @Sendable (HTTPResponse) -> ProviderAnswer
    ) async -> [PushResult] {
        var results = [PushResult?](repeating: nil, count: deliveries.count)
        var requests: [HTTPRequest] = []
        var positions: [Int] = []
        requests.reserveCapacity(deliveries.count)
        positions.reserveCapacity(deliveries.count)
        for (index, delivery) in deliveries.enumerated() {
            switch prepare(delivery) {
            case .send(let request):
                requests.append(request)
                positions.append(index)
            case .refuse(let result):
                results[index] = result
            }
        }
        for (position, result) in zip(positions, await perform(requests, parse: parse)) {
            var result = result
            let secrets = [deliveries[position].token] + secrets
            if let reason = result.reason {
                let scrubbed = SafeText.sanitize(reason.rawValue, limit: Int.max, redactingTokens: true, secrets: secrets)
                if scrubbed != reason.rawValue { result.reason = PushDeliveryReason(rawValue: scrubbed) }
            }
            if let detail = result.detail {
                let scrubbed = SafeText.sanitize(detail, limit: Int.max, redactingTokens: true, secrets: secrets)
                if scrubbed != detail { result.detail = scrubbed }
            }
            results[position] = result
        }
        return results.map { $0 ?? PushResult(outcome: .failed, reason: .noResult) }
    }
}

extension HTTPClientError {
    /// The answer that never came: a network failure is never a verdict on the token, always
    /// `failed`. Only failures that prove the request was not processed are retryable. The
    /// relay reads the same reasons for its log.
    package var unanswered: ProviderAnswer {
        switch code {
        case .dnsFailure: .unanswered(.dnsFailure, retryable: true)
        case .connectionRefused: .unanswered(.connectionRefused, retryable: true)
        case .tlsFailure: .unanswered(.tlsFailure, retryable: true)
        case .streamRefused: .unanswered(.streamRefused, retryable: true)
        case .timeout: .unanswered(.timeout, retryable: false)
        case .connectionLost: .unanswered(.connectionLost, retryable: false)
        case .cancelled: .unanswered(.cancelled, retryable: false)
        case .shutdown: .unanswered(.shutdown, retryable: false)
        case .responseTooLarge: .unanswered(.responseTooLarge, retryable: false)
        case .badResponse: .unanswered(.badResponse, retryable: false)
        case .invalidRequest: .unanswered(.invalidRequest, retryable: false)
        case .invalidConfiguration: .unanswered(.invalidConfiguration, retryable: false)
        case .other: .unanswered(.networkError, retryable: false)
        case .addressNotAllowed: .unanswered(.endpointNotAllowed, retryable: false)
        }
    }

    /// No connection could be made: the endpoint is down or unreachable.
    var isConnectFailure: Bool {
        switch code {
        case .dnsFailure, .connectionRefused, .tlsFailure: return true
        default: return false
        }
    }
}

/// Keeps a transport from reconnecting in a storm: after a failed connect, sends fail fast
/// (`endpoint_backoff`) for a window that doubles from 1 s up to 60 s with each further failed
/// connect, and resets on the first success. The first send after a window is the probe.
final class EndpointBackoff: Sendable {
    private struct State {
        var consecutiveFailures = 0
        var retryAt: ContinuousClock.Instant?
        var lastFailureAt: ContinuousClock.Instant?
    }

    private let state = Locked(State())
    let initialWindow: Duration
    let maximumWindow: Duration

    init(initialWindow: Duration = .seconds(1), maximumWindow: Duration = .seconds(60)) {
        self.initialWindow = initialWindow
        self.maximumWindow = maximumWindow
    }

    func isBackingOff(now: ContinuousClock.Instant) -> Bool {
        state.withLock { state in
            guard let retryAt = state.retryAt else { return false }
            return now < retryAt
        }
    }

    /// Records a failed connect. Attempts that started before the last recorded failure belong
    /// to the same outage (a burst of concurrent pushes): only a later attempt, a probe after
    /// the window, escalates it.
    func recordConnectFailure(now: ContinuousClock.Instant, attemptStartedAt: ContinuousClock.Instant? = nil) {
        state.withLock { state in
            if let last = state.lastFailureAt, let started = attemptStartedAt, started <= last, state.retryAt != nil {
                return
            }
            state.lastFailureAt = now
            state.consecutiveFailures += 1
            let exponent = min(state.consecutiveFailures - 1, 16)
            let window = min(initialWindow * (1 << exponent), maximumWindow)
            state.retryAt = now + window
        }
    }

    func recordSuccess() {
        state.withLock { state in
            state.consecutiveFailures = 0
            state.retryAt = nil
            state.lastFailureAt = nil
        }
    }
}

extension HTTPRequest {
    /// A provider's request (PushProviders) sent to `endpoint` (scheme and authority, no
    /// trailing slash).
    package init(_ request: ProviderRequest, endpoint: String, timeout: Duration? = nil) {
        self.init(
            method: Method(request.method), url: endpoint + request.path, headers: HTTPHeaders(request.headers.map { ($0.name, $0.value) }),
            body: request.body, timeout: timeout)
    }
}
