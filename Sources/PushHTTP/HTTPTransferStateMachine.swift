/// The life of one `HTTPClient.send(_:)`, as a value: no I/O, no locks and no continuations,
/// so every transition is testable on its own. `HTTPTransfer` keeps one under its lock and
/// performs the actions it returns; exactly one action per transfer resumes the caller.
///
/// One attempt per transfer: the client retries nothing. A stream the server refused unprocessed
/// ends `.streamRefused`, and whoever knows whether a resend is wanted (the provider layer's
/// exchange: `ProviderCall`, `RelayExchange`) sends it again.
///
/// ```
/// initialized ──start──▶ queued ─willStart─▶ running ──completed──▶ finished
///      │                    │                  │
///    cancel               cancel             cancel
///      ▼                    ▼                  ▼
/// cancelledBeforeStart ─start─▶ finished    cancelling ──aborted / completed──▶ finished
/// ```
struct HTTPTransferStateMachine: Sendable {
    enum State: Sendable, Equatable {
        /// Created; not yet handed to the loop.
        case initialized
        /// The task was cancelled before the transfer was handed to the loop.
        case cancelledBeforeStart
        /// In the loop's command queue.
        case queued
        /// An engine is running it (a libcurl easy handle or an HTTP/2 stream).
        case running
        /// The task was cancelled; the loop has been asked to abort the transfer.
        case cancelling
        /// The caller has been (or is being) resumed. Every later event is ignored.
        case finished
    }

    enum StartAction: Sendable, Equatable {
        /// Hand the transfer to the loop.
        case submit
        /// Resume the caller at once.
        case fail(HTTPClientError)
    }

    enum CancelAction: Sendable, Equatable {
        case none
        /// Ask the loop to abort the transfer.
        case abort
    }

    enum AttemptAction: Sendable, Equatable {
        /// Run it (an easy handle, or a stream).
        case start
        /// Resume the caller with this error; start nothing.
        case fail(HTTPClientError)
        /// Already finished: start nothing, resume nobody.
        case drop
    }

    enum CompletionAction: Sendable, Equatable {
        case succeed
        case fail(HTTPClientError)
        /// Already finished: resume nobody.
        case drop
    }

    private(set) var state: State = .initialized

    init() {}

    /// `send` hands the transfer to the loop.
    mutating func start() -> StartAction {
        switch state {
        case .initialized:
            state = .queued
            return .submit
        case .cancelledBeforeStart:
            state = .finished
            return .fail(.cancelled)
        case .queued, .running, .cancelling, .finished:
            // start is called once per transfer; a second call must not resume twice.
            return .fail(HTTPClientError(.other, detail: "transfer started twice"))
        }
    }

    /// The loop would not take the transfer: it is shutting down.
    mutating func submitFailed() -> Bool {
        switch state {
        case .queued, .cancelling:
            state = .finished
            return true
        case .initialized, .cancelledBeforeStart, .running, .finished:
            return false
        }
    }

    /// The calling task was cancelled.
    mutating func cancel() -> CancelAction {
        switch state {
        case .initialized:
            state = .cancelledBeforeStart
            return .none
        case .queued, .running:
            state = .cancelling
            return .abort
        case .cancelledBeforeStart, .cancelling, .finished:
            return .none
        }
    }

    /// The loop picked the transfer from its queue.
    mutating func willStartAttempt() -> AttemptAction {
        switch state {
        case .queued:
            state = .running
            return .start
        case .cancelling:
            state = .finished
            return .fail(.cancelled)
        case .initialized, .cancelledBeforeStart, .running, .finished:
            return .drop
        }
    }

    /// An engine finished the attempt, or setting it up failed.
    ///
    /// Cancelled meanwhile: a response still counts (the server answered); a failure becomes
    /// `.cancelled` because it may be the abort itself.
    mutating func completed(_ outcome: Result<Void, HTTPClientError>) -> CompletionAction {
        switch state {
        case .running:
            state = .finished
            switch outcome {
            case .success: return .succeed
            case .failure(let error): return .fail(error)
            }
        case .cancelling:
            state = .finished
            switch outcome {
            case .success: return .succeed
            case .failure: return .fail(.cancelled)
            }
        case .initialized, .cancelledBeforeStart, .queued, .finished:
            return .drop
        }
    }

    /// The loop removed the transfer without a result (cancel processed, or shutdown).
    /// True if the caller must now be resumed with the error.
    mutating func aborted() -> Bool {
        switch state {
        case .queued, .running, .cancelling:
            state = .finished
            return true
        case .initialized, .cancelledBeforeStart, .finished:
            return false
        }
    }
}
