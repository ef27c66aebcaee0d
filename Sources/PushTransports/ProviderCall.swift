import PushHTTP
import PushEnvelope
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

    /// What a classifier returns: the verdict plus anything worth keeping from the answer.
    struct Verdict: Sendable {
        var classification: Classification
        var apnsId: String? = nil
        var invalidSince: Int64? = nil
    }

    /// Sends `request`, classifying each answer with `classify`, retrying per the policy.
    func perform(_ request: HTTPRequest, classify: @Sendable (HTTPResponse) -> Verdict) async -> PushResult {
        await perform([request], classify: classify).first ?? PushResult(outcome: .failed, reason: .noResult)
    }

    /// Sends every request as one batch (one submission to the HTTP client, one suspension),
    /// classifies each answer, and sends the retryable ones again per the policy, together,
    /// after the longest wait any of them asks for. Results are in request order; each
    /// latency runs from the start of this call to that request's last answer.
    func perform(_ requests: [HTTPRequest], classify: @Sendable (HTTPResponse) -> Verdict) async -> [PushResult] {
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
                let verdict: Verdict
                var status: Int?
                var retryAfter: Duration?
                switch outcome.result {
                case .success(let response):
                    reached = true
                    status = response.status
                    retryAfter = PushRetryPolicy.retryAfter(response.headers.first(name: "retry-after"))
                    verdict = classify(response)
                case .failure(let error):
                    if error.isConnectFailure { connectFailed = true }
                    verdict = Verdict(classification: Self.classify(error))
                }
                let latency = (roundStart - start) + outcome.elapsed
                if verdict.classification.retryable, !Task.isCancelled,
                    let delay = policy.delay(afterAttempt: attempt, elapsed: latency, retryAfter: retryAfter)
                {
                    retry.append(index)
                    wait = max(wait, delay)
                    results[index] = PushResult(
                        outcome: verdict.classification.outcome, reason: verdict.classification.reason, detail: verdict.classification.detail, status: status,
                        latency: latency, attempts: attempt)
                    continue
                }
                results[index] = PushResult(
                    outcome: verdict.classification.outcome, reason: verdict.classification.reason, detail: verdict.classification.detail, status: status,
                    latency: latency, apnsId: verdict.apnsId, invalidSince: verdict.invalidSince, attempts: attempt)
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
        classify: @Sendable (HTTPResponse) -> Verdict
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
        for (position, result) in zip(positions, await perform(requests, classify: classify)) {
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

    /// A network failure is never a verdict on the token: always `failed`. Only failures that
    /// prove the request was not processed are retryable.
    static func classify(_ error: HTTPClientError) -> Classification {
        switch error.code {
        case .dnsFailure: return Classification(outcome: .failed, reason: .dnsFailure, retryable: true)
        case .connectionRefused: return Classification(outcome: .failed, reason: .connectionRefused, retryable: true)
        case .tlsFailure: return Classification(outcome: .failed, reason: .tlsFailure, retryable: true)
        case .streamRefused: return Classification(outcome: .failed, reason: .streamRefused, retryable: true)
        case .timeout: return Classification(outcome: .failed, reason: .timeout)
        case .connectionLost: return Classification(outcome: .failed, reason: .connectionLost)
        case .cancelled: return Classification(outcome: .failed, reason: .cancelled)
        case .shutdown: return Classification(outcome: .failed, reason: .shutdown)
        case .responseTooLarge: return Classification(outcome: .failed, reason: .responseTooLarge)
        case .badResponse: return Classification(outcome: .failed, reason: .badResponse)
        case .invalidRequest: return Classification(outcome: .failed, reason: .invalidRequest)
        case .invalidConfiguration: return Classification(outcome: .failed, reason: .invalidConfiguration)
        case .other: return Classification(outcome: .failed, reason: .networkError)
        // The detail names the proxy (password as ***) and, for a refusal, its status.
        case .proxyAuthRequired: return Classification(outcome: .failed, reason: .proxyAuthRequired, detail: error.detail)
        case .proxyRefused: return Classification(outcome: .failed, reason: .proxyRefused, detail: error.detail)
        }
    }

    /// The body as a JSON object, when it is one (members then looked up exactly, `value["key"]`).
    static func jsonObject(_ body: [UInt8]) -> JSONValue? {
        guard !body.isEmpty, body.count <= 65_536, let value = try? JSONParser.parse(body), value.objectValue != nil else { return nil }
        return value
    }

    /// A provider's message as it may be kept and printed (`SafeText.sanitize`): controls
    /// escaped, anything that looks like a token redacted, at most 200 characters.
    static func excerpt(_ text: String) -> String {
        SafeText.sanitize(text, limit: 200, redactingTokens: true)
    }

    /// A provider's code (the relay's `code`, APNs `reason`, FCM `errorCode`/`status`, OAuth
    /// `error`) as it may be kept and printed: the same sanitizer, at most 64 characters.
    static func code(_ text: String) -> String {
        SafeText.sanitize(text, limit: 64, redactingTokens: true)
    }
}

extension HTTPClientError {
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
