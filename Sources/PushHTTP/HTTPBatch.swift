import PushSync

/// The results of one `HTTPClient.send` call, one slot per request, filled by whichever engine
/// thread finishes each request; the caller's continuation is resumed once, when the last slot
/// is filled, outside the lock.
///
/// Why a batch: a dispatch to 10,000 devices is one continuation and one suspension, not
/// 10,000, and its requests enter the engine under one lock with one wakeup.
final class HTTPBatch: Sendable {
    typealias Continuation = CheckedContinuation<[HTTPClient.Outcome], Never>

    private struct State {
        var outcomes: [HTTPClient.Outcome?]
        var remaining: Int
        var continuation: Continuation?
    }

    let submittedAt: ContinuousClock.Instant
    private let state: Locked<State>
    /// Set for `HTTPClient.start`: each outcome goes here as it ends, none is kept.
    private let report: (@Sendable (Int, HTTPClient.Outcome) -> Void)?

    init(count: Int, submittedAt: ContinuousClock.Instant, report: (@Sendable (Int, HTTPClient.Outcome) -> Void)? = nil) {
        self.submittedAt = submittedAt
        self.report = report
        state = Locked(State(outcomes: Array(repeating: nil, count: count), remaining: count))
    }

    /// Set before any request is started, so a request that fails at once finds it.
    func setContinuation(_ continuation: Continuation) {
        state.withLock { $0.continuation = continuation }
    }

    /// Fills slot `index` (once; later calls are ignored) and resumes the caller after the last.
    func complete(_ index: Int, _ result: Result<HTTPResponse, HTTPClientError>) {
        let elapsed = submittedAt.duration(to: .now)
        if let report {
            let first = state.withLock { state -> Bool in
                guard state.outcomes.indices.contains(index), state.outcomes[index] == nil else { return false }
                // A placeholder marks the slot taken: later calls are ignored.
                state.outcomes[index] = HTTPClient.Outcome(result: .failure(.other), elapsed: elapsed)
                state.remaining -= 1
                return true
            }
            if first { report(index, HTTPClient.Outcome(result: result, elapsed: elapsed)) }
            return
        }
        let finished: (Continuation, [HTTPClient.Outcome])? = state.withLock { state in
            guard state.outcomes.indices.contains(index), state.outcomes[index] == nil else { return nil }
            state.outcomes[index] = HTTPClient.Outcome(result: result, elapsed: elapsed)
            state.remaining -= 1
            guard state.remaining == 0, let continuation = state.continuation else { return nil }
            state.continuation = nil
            let outcomes = state.outcomes.map { $0 ?? HTTPClient.Outcome(result: .failure(.other), elapsed: elapsed) }
            return (continuation, outcomes)
        }
        if let (continuation, outcomes) = finished { continuation.resume(returning: outcomes) }
    }
}
