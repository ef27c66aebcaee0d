import PushSync

/// One request of one `execute` (or `send`) call, shared between the caller and the engine
/// threads: the request, its deadline, the engine that currently holds it, and the state
/// machine that decides, under one lock, when its caller is resumed and with what. Exactly one
/// action delivers the result; it is delivered outside the lock.
///
/// Lock order: a transfer's lock may be held while enqueuing on an engine (that keeps an `add`
/// ahead of its `cancel` in a queue); an engine never holds its queue lock while taking a
/// transfer's lock.
final class HTTPTransfer: Sendable {
    typealias Continuation = CheckedContinuation<Result<HTTPResponse, HTTPClientError>, Never>

    /// Its origin, path and address policy are the ones in effect (the client's policy may
    /// tighten the request's).
    let request: HTTPClientRequest
    /// The proxy its connection goes through, nil for direct.
    let proxy: HTTPProxy?
    let deadline: ContinuousClock.Instant
    /// Where the result goes: the caller's own continuation, or a slot of a batch.
    private let batch: HTTPBatch?
    private let index: Int

    var isHTTPS: Bool { request.origin.isTLS }

    /// The engine a cancellation must be sent to.
    enum Engine: Sendable {
        case curl(CurlMultiLoop)
        case h2(H2EventLoop)
    }

    private struct Guarded {
        var machine: HTTPTransferStateMachine
        var engine: Engine
        /// The caller of `execute`, until its result is delivered.
        var continuation: Continuation?
    }

    private let locked: Locked<Guarded>
    /// The engine chosen by `send` (the client may later move it to libcurl, when the HTTP/2
    /// engine hands it back for an origin without h2).
    let initialEngine: Engine

    init(
        request: HTTPClientRequest, proxy: HTTPProxy? = nil, deadline: ContinuousClock.Instant, batch: HTTPBatch? = nil, index: Int = 0,
        engine: Engine
    ) {
        self.request = request
        self.proxy = proxy
        self.deadline = deadline
        self.batch = batch
        self.index = index
        self.initialEngine = engine
        self.locked = Locked(Guarded(machine: HTTPTransferStateMachine(), engine: engine))
    }

    /// Set before `begin`, so a transfer that fails at once finds its caller.
    func setContinuation(_ continuation: Continuation) {
        locked.withLock { $0.continuation = continuation }
    }

    /// Resumes the caller (or fills the batch slot). Called once, by the one action that
    /// finishes the transfer, outside the lock.
    private func deliver(_ result: Result<HTTPResponse, HTTPClientError>) {
        if let batch {
            batch.complete(index, result)
        } else if let continuation = locked.withLock({ $0.continuation.take() }) {
            continuation.resume(returning: result)
        }
    }

    /// What is left of the request's timeout; zero or negative when spent.
    var remainingTime: Duration { ContinuousClock.now.duration(to: deadline) }

    /// Marks the transfer started. False when it must not be submitted (it was cancelled
    /// before starting; its slot has been filled).
    func begin() -> Bool {
        let action = locked.withLock { $0.machine.start() }
        switch action {
        case .submit:
            return true
        case .fail(let error):
            deliver(.failure(error))
            return false
        }
    }

    /// The engine would not take the transfer: it is shutting down.
    func submitFailed() {
        if locked.withLock({ $0.machine.submitFailed() }) { deliver(.failure(.shutdown)) }
    }

    /// The calling task was cancelled: ask the engine holding the transfer to abort it.
    func cancel() {
        locked.withLock { locked in
            guard locked.machine.cancel() == .abort else { return }
            // If the engine is shutting down it fails every transfer anyway.
            switch locked.engine {
            case .curl(let loop): _ = loop.enqueue(.cancel(self))
            case .h2(let loop): _ = loop.enqueue(.cancel(self))
            }
        }
    }

    /// The origin does not speak HTTP/2 (the H2 engine handed the still-queued transfer back
    /// to the client): libcurl runs it. Under the lock, so a concurrent cancel goes to whichever
    /// engine holds it.
    func reroute(to loop: CurlMultiLoop) {
        let accepted = locked.withLock { locked in
            locked.engine = .curl(loop)
            return loop.enqueue(.add(self))
        }
        if !accepted { submitFailed() }
    }

    /// Engine thread: whether to run the transfer now; false (and the slot filled if need be)
    /// when it must not run.
    func willStart() -> Bool {
        let action = locked.withLock { $0.machine.willStartAttempt() }
        switch action {
        case .start:
            return true
        case .fail(let error):
            deliver(.failure(error))
            return false
        case .drop:
            return false
        }
    }

    /// Engine thread: whether a transfer taken back into a queue is still wanted (not
    /// cancelled or timed out meanwhile).
    var isRunning: Bool {
        locked.withLock { $0.machine.state == .running }
    }

    /// Engine thread: the transfer ended; its slot is filled (unless it was already).
    func complete(_ result: Result<HTTPResponse, HTTPClientError>) {
        let action = locked.withLock { $0.machine.completed(result.map { _ in () }) }
        switch action {
        case .succeed:
            deliver(result)
        case .fail(let error):
            deliver(.failure(error))
        case .drop:
            break
        }
    }

    /// Engine thread: the transfer was removed without a result (cancel processed, timeout
    /// while queued, shutdown).
    func abort(with error: HTTPClientError) {
        if locked.withLock({ $0.machine.aborted() }) { deliver(.failure(error)) }
    }
}
