package import PushHTTP
package import PushProviders
import PushSync

/// One provider request with everything around it that every channel shares (through
/// `DeliveryPipeline`): the endpoint backoff, the retry policy, the in-flight gauge, the mapping
/// of network errors, and the latency.
///
/// The hub's one retry layer: the HTTP client sends each request once. A stream the server
/// refused unprocessed (REFUSED_STREAM, above a GOAWAY's last stream, or never sent before its
/// connection closed) is sent again here at once, once per exchange whatever the policy and
/// within the first attempt's timeout, since it cannot have been delivered; it does not use up
/// an attempt of the policy, whose resends are all the others.
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

    /// One batch's way of sending, handed to each delivery of a batch (and through it to a
    /// provider client, `APNsClient`, `FCMClient`): when the endpoint failed to connect so
    /// recently that it is backing off, nothing is sent (`endpoint_backoff`); otherwise `perform`
    /// with the batch's start. The caller scrubs what it sent from the answer it keeps.
    struct Batch: ProviderExchange {
        let call: ProviderCall
        let backingOff: Bool
        let startedAt: ContinuousClock.Instant

        func exchange(_ request: HTTPRequest, parse: (HTTPResponse) -> ProviderAnswer) async -> ProviderExchangeResult {
            if backingOff { return .declined(.endpointBackoff) }
            return await call.perform(request, batchStartedAt: startedAt, parse: parse)
        }

        /// Starts the first attempts of `requests` in one hand-off to the client, without
        /// waiting: `report` hears each outcome as it ends (`ProviderCall.read` reads it). Nil
        /// when the endpoint is backing off: nothing is sent.
        func start(_ requests: [HTTPRequest], report: @escaping @Sendable (Int, HTTPClient.Outcome) -> Void) -> HTTPClient.StartedBatch? {
            if backingOff { return nil }
            let inFlight = call.inFlight
            inFlight?.increment(by: Double(requests.count))
            return call.client.start(requests) { index, outcome in
                inFlight?.decrement(by: 1)
                report(index, outcome)
            }
        }

        /// A first attempt's outcome (from `start`) read: the exchange as it stands, and whether
        /// the policy sends it again (then `retry`).
        func read(first outcome: HTTPClient.Outcome, parse: (HTTPResponse) -> ProviderAnswer) -> (ProviderExchangeResult, retries: Bool) {
            // The latency runs from the chunk's submission: the outcome's own.
            let (answer, _) = call.read(outcome.result, attemptStartedAt: startedAt, startedAt: startedAt, parse: parse)
            let latency = outcome.elapsed
            let retries = call.resendsRefused(answer) || call.retryDelay(answer, attempt: 1, latency: latency) != nil
            return (ProviderExchangeResult(answer: answer, attempts: 1, latency: latency), retries)
        }

        /// The attempts after a first one that `read(first:)` said the policy retries.
        func retry(_ request: HTTPRequest, after first: HTTPClient.Outcome, parse: (HTTPResponse) -> ProviderAnswer) async -> ProviderExchangeResult {
            await call.perform(
                request, batchStartedAt: startedAt, startedAt: ContinuousClock.now - first.elapsed, firstOutcome: first.result, parse: parse)
        }
    }

    /// The exchange for a batch that starts now. Asked once per batch: its requests started with
    /// it, so the connect failures of one outage that hits them count once, however late their
    /// tasks ran.
    func batch() -> Batch {
        let now = ContinuousClock.now
        return Batch(call: self, backingOff: backoff.isBackingOff(now: now), startedAt: now)
    }

    /// Sends one request, reads each answer with `parse`, and sends it again per the policy
    /// after its own backoff (never another request's). The latency runs from this call to the
    /// last answer.
    func perform(_ request: HTTPRequest, batchStartedAt: ContinuousClock.Instant, parse: (HTTPResponse) -> ProviderAnswer) async -> ProviderExchangeResult {
        await perform(request, batchStartedAt: batchStartedAt, startedAt: ContinuousClock.now, firstOutcome: nil, parse: parse)
    }

    /// The loop of attempts. `firstOutcome`: the first attempt's outcome when it was already
    /// sent (in a batch); otherwise the first attempt is sent here.
    private func perform(
        _ request: HTTPRequest, batchStartedAt: ContinuousClock.Instant, startedAt start: ContinuousClock.Instant,
        firstOutcome: Result<HTTPResponse, HTTPClientError>?, parse: (HTTPResponse) -> ProviderAnswer
    ) async -> ProviderExchangeResult {
        var attempt = 0
        var refusedResent = false
        var sending = request
        while true {
            attempt += 1
            // The first attempt belongs to its batch; a retry starts on its own.
            let attemptStart = attempt == 1 ? batchStartedAt : ContinuousClock.now
            let outcome: Result<HTTPResponse, HTTPClientError>
            if attempt == 1, let firstOutcome {
                outcome = firstOutcome
            } else {
                inFlight?.increment(by: 1)
                do {
                    outcome = .success(try await client.send(sending))
                } catch {
                    outcome = .failure(error)
                }
                inFlight?.decrement(by: 1)
            }
            let (answer, latency) = read(outcome, attemptStartedAt: attemptStart, startedAt: start, parse: parse)
            if !refusedResent, resendsRefused(answer) {
                // At once, within what is left of this attempt's own timeout.
                let deadline = attemptStart + (sending.timeout ?? client.configuration.requestTimeout)
                let left = ContinuousClock.now.duration(to: deadline)
                if left > .milliseconds(1) {
                    refusedResent = true
                    sending.timeout = left
                    continue
                }
            }
            sending = request
            // The refused stream's resend is not one of the policy's attempts.
            if let delay = retryDelay(answer, attempt: attempt - (refusedResent ? 1 : 0), latency: latency) {
                do {
                    try await Task.sleep(for: delay)
                    continue
                } catch {}  // cancelled: keep the last answer
            }
            return ProviderExchangeResult(answer: answer, attempts: attempt, latency: latency)
        }
    }

    /// One attempt's outcome read: any answer ends an endpoint outage, a failed connect starts
    /// one; the latency runs from `start` to now.
    private func read(
        _ outcome: Result<HTTPResponse, HTTPClientError>, attemptStartedAt: ContinuousClock.Instant, startedAt start: ContinuousClock.Instant,
        parse: (HTTPResponse) -> ProviderAnswer
    ) -> (ProviderAnswer, Duration) {
        let now = ContinuousClock.now
        switch outcome {
        case .success(let response):
            backoff.recordSuccess()
            return (parse(response), start.duration(to: now))
        case .failure(let error):
            if error.isConnectFailure { backoff.recordConnectFailure(now: now, attemptStartedAt: attemptStartedAt) }
            return (error.unanswered, start.duration(to: now))
        }
    }

    /// A refused stream is sent again at once (the first time), whatever the policy.
    private func resendsRefused(_ answer: ProviderAnswer) -> Bool {
        answer.isRefusedStream && HubAnswerPolicy.mayRetry(answer) && !Task.isCancelled
    }

    /// How long the policy waits before sending again after its `attempt`-th, or nil when this
    /// answer is final.
    private func retryDelay(_ answer: ProviderAnswer, attempt: Int, latency: Duration) -> Duration? {
        guard HubAnswerPolicy.mayRetry(answer), !Task.isCancelled else { return nil }
        return policy.delay(afterAttempt: attempt, elapsed: latency, retryAfter: answer.retryAfter)
    }
}

extension HTTPClient {
    /// Sends `request` within `deadline`, and once more at once if its stream was refused
    /// unprocessed (the client itself resends nothing): the relay's exchange and the OAuth token
    /// fetch. Nil when no time is left for a first try. (`ProviderCall` does the same inside its
    /// policy's loop.)
    package func sendResendingRefused(
        _ request: HTTPRequest, deadline: ContinuousClock.Instant
    ) async -> (result: Result<HTTPResponse, HTTPClientError>, attempts: Int)? {
        var last: (result: Result<HTTPResponse, HTTPClientError>, attempts: Int)?
        for attempt in 1...2 {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .milliseconds(1) else { break }
            var sending = request
            sending.timeout = remaining
            do {
                return (.success(try await send(sending)), attempt)
            } catch {
                last = (.failure(error), attempt)
                guard error == .streamRefused, !Task.isCancelled else { break }
            }
        }
        return last
    }
}

extension ProviderAnswer {
    /// The server refused the stream unprocessed (`HTTPClientError.streamRefused`): sending it
    /// again cannot deliver twice. The hub's and the relay's exchanges resend it once.
    package var isRefusedStream: Bool { reason == .streamRefused }
}

extension HTTPClientError {
    /// The answer that never came: a network failure is never a verdict on the token, always
    /// `failed`. Only failures that prove the request was not processed say so. The
    /// relay reads the same reasons for its log.
    package var unanswered: ProviderAnswer {
        switch code {
        case .dnsFailure: .unanswered(.dnsFailure, notProcessed: true)
        case .connectionRefused: .unanswered(.connectionRefused, notProcessed: true)
        case .tlsFailure: .unanswered(.tlsFailure, notProcessed: true)
        case .streamRefused: .unanswered(.streamRefused, notProcessed: true)
        case .timeout: .unanswered(.timeout, notProcessed: false)
        case .connectionLost: .unanswered(.connectionLost, notProcessed: false)
        case .cancelled: .unanswered(.cancelled, notProcessed: false)
        case .shutdown: .unanswered(.shutdown, notProcessed: false)
        case .responseTooLarge: .unanswered(.responseTooLarge, notProcessed: false)
        case .badResponse: .unanswered(.badResponse, notProcessed: false)
        case .invalidRequest: .unanswered(.invalidRequest, notProcessed: false)
        case .invalidConfiguration: .unanswered(.invalidConfiguration, notProcessed: false)
        case .other: .unanswered(.networkError, notProcessed: false)
        // The detail names the proxy (its password as ***) and, for a refusal, its status.
        case .proxyAuthRequired: ProviderAnswer(.refused, status: nil, reason: .proxyAuthRequired, detail: detail)
        case .proxyRefused: ProviderAnswer(.refused, status: nil, reason: .proxyRefused, detail: detail)
        case .addressNotAllowed: .unanswered(.endpointNotAllowed, notProcessed: false)
        }
    }

    /// No connection could be made: the endpoint is down or unreachable.
    var isConnectFailure: Bool {
        switch code {
        case .dnsFailure, .connectionRefused, .tlsFailure, .proxyAuthRequired, .proxyRefused: return true
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
    /// A provider's request (PushProviders) to a configured endpoint parsed once.
    package init(_ request: ProviderRequest, endpoint: HTTPEndpoint, timeout: Duration? = nil) {
        self = endpoint.request(
            method: Method(request.method), path: request.path, headers: HTTPHeaders(request.headers.map { ($0.name, $0.value) }),
            body: request.body, timeout: timeout)
    }

    /// A provider's request sent to `endpoint` (scheme and authority, no trailing slash), as a
    /// URL: for an endpoint of the moment (a Web Push subscription's origin).
    package init(_ request: ProviderRequest, endpoint: String, timeout: Duration? = nil) {
        self.init(
            method: Method(request.method), url: endpoint + request.path, headers: HTTPHeaders(request.headers.map { ($0.name, $0.value) }),
            body: request.body, timeout: timeout)
    }
}
