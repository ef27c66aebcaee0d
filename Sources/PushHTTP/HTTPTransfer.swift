import PushSync

/// One `send(_:)` shared between the calling task and the loop thread: the request, its
/// deadline, the caller's continuation and the state machine that decides, under one lock,
/// who resumes the continuation and with what. The continuation is taken out of the lock
/// before it is resumed, so it is resumed exactly once and never under a lock.
///
/// Lock order: a transfer's lock may be held while enqueuing on the loop (that keeps an
/// `add` ahead of its `cancel` in the queue); the loop never holds its queue lock while
/// taking a transfer's lock.
final class HTTPTransfer: Sendable {
    typealias Continuation = CheckedContinuation<Result<HTTPResponse, HTTPClientError>, Never>

    let request: HTTPRequest
    let isHTTPS: Bool
    let deadline: ContinuousClock.Instant

    private struct Guarded {
        var machine: HTTPTransferStateMachine
        var continuation: Continuation?

        mutating func takeContinuation() -> Continuation? {
            defer { continuation = nil }
            return continuation
        }
    }

    private let locked: Locked<Guarded>

    init(request: HTTPRequest, isHTTPS: Bool, timeout: Duration, maximumAttempts: Int = 2) {
        self.request = request
        self.isHTTPS = isHTTPS
        self.deadline = ContinuousClock.now.advanced(by: timeout)
        self.locked = Locked(Guarded(machine: HTTPTransferStateMachine(maximumAttempts: maximumAttempts)))
    }

    /// What is left of the request's timeout (for a retry); zero or negative when spent.
    var remainingTime: Duration { ContinuousClock.now.duration(to: deadline) }

    /// Hands the transfer to the loop, or resumes at once if cancelled or shut down.
    func start(_ continuation: Continuation, on loop: CurlMultiLoop) {
        let failure: HTTPClientError? = locked.withLock { locked in
            switch locked.machine.start() {
            case .fail(let error):
                return error
            case .submit:
                locked.continuation = continuation
                if loop.enqueue(.add(self)) { return nil }
                _ = locked.machine.submitFailed()
                locked.continuation = nil
                return .shutdown
            }
        }
        if let failure { continuation.resume(returning: .failure(failure)) }
    }

    /// The calling task was cancelled: ask the loop to abort the transfer.
    func cancel(on loop: CurlMultiLoop) {
        locked.withLock { locked in
            if locked.machine.cancel() == .abort {
                // If the loop is shutting down it fails every transfer anyway.
                _ = loop.enqueue(.cancel(self))
            }
        }
    }

    /// Loop thread: the attempt to put on the multi handle, or nil (and the caller resumed
    /// if need be) when the transfer must not run.
    func willAddToMulti() -> Int? {
        let (action, continuation) = locked.withLock { locked in
            let action = locked.machine.willAddToMulti()
            switch action {
            case .add, .drop: return (action, nil as Continuation?)
            case .fail: return (action, locked.takeContinuation())
            }
        }
        switch action {
        case .add(let attempt):
            return attempt
        case .fail(let error):
            continuation?.resume(returning: .failure(error))
            return nil
        case .drop:
            return nil
        }
    }

    /// Loop thread: an attempt ended. Returns the next attempt when the request is to be
    /// retried; otherwise the caller has been resumed.
    func complete(_ result: Result<HTTPResponse, HTTPClientError>) -> Int? {
        let (action, continuation) = locked.withLock { locked in
            let action = locked.machine.completed(result.map { _ in () })
            switch action {
            case .retry, .drop: return (action, nil as Continuation?)
            case .succeed, .fail: return (action, locked.takeContinuation())
            }
        }
        switch action {
        case .retry(let attempt):
            return attempt
        case .succeed:
            continuation?.resume(returning: result)
        case .fail(let error):
            continuation?.resume(returning: .failure(error))
        case .drop:
            break
        }
        return nil
    }

    /// Loop thread: the transfer was removed without a result (cancel processed, shutdown).
    func abort(with error: HTTPClientError) {
        let continuation = locked.withLock { locked in
            locked.machine.aborted() ? locked.takeContinuation() : nil
        }
        continuation?.resume(returning: .failure(error))
    }
}
