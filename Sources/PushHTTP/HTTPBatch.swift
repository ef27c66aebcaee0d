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
        /// Instead of a continuation: called once with the outcomes, on the thread that filled
        /// the last slot (`HTTPClient.send(_:completion:)`).
        var callback: (@Sendable ([HTTPClient.Outcome]) -> Void)?
    }

    let submittedAt: ContinuousClock.Instant
    private let state: Locked<State>

    init(count: Int, submittedAt: ContinuousClock.Instant) {
        self.submittedAt = submittedAt
        state = Locked(State(outcomes: Array(repeating: nil, count: count), remaining: count))
    }

    /// Set before any request is started, so a request that fails at once finds it.
    func setContinuation(_ continuation: Continuation) {
        state.withLock { $0.continuation = continuation }
    }

    /// The callback form of `setContinuation`.
    func setCallback(_ callback: @escaping @Sendable ([HTTPClient.Outcome]) -> Void) {
        state.withLock { $0.callback = callback }
    }

    /// Fills slot `index` (once; later calls are ignored) and resumes the caller after the last.
    func complete(_ index: Int, _ result: Result<HTTPResponse, HTTPClientError>) {
        let elapsed = submittedAt.duration(to: .now)
        let finished: (Continuation?, (@Sendable ([HTTPClient.Outcome]) -> Void)?, [HTTPClient.Outcome])? = state.withLock { state in
            guard state.outcomes.indices.contains(index), state.outcomes[index] == nil else { return nil }
            state.outcomes[index] = HTTPClient.Outcome(result: result, elapsed: elapsed)
            state.remaining -= 1
            guard state.remaining == 0, state.continuation != nil || state.callback != nil else { return nil }
            let continuation = state.continuation
            let callback = state.callback
            state.continuation = nil
            state.callback = nil
            let outcomes = state.outcomes.map { $0 ?? HTTPClient.Outcome(result: .failure(.other), elapsed: elapsed) }
            return (continuation, callback, outcomes)
        }
        guard let (continuation, callback, outcomes) = finished else { return }
        continuation?.resume(returning: outcomes)
        callback?(outcomes)
    }
}
