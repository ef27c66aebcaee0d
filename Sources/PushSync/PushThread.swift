import PushPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a thread could not be started. The body was not run, anywhere.
package struct PushThreadError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The thread's name.
    package let name: String
    /// The call that failed (`pthread_create`, or `pthread_attr_setstacksize` for a stack size
    /// the system does not accept).
    package let call: String
    /// What it returned: `EAGAIN` when the system has no thread or stack memory to give.
    package let code: Int32

    package var description: String { "cannot start thread \(name) (\(call): \(Self.name(of: code)))" }

    private static func name(of code: Int32) -> String {
        switch code {
        case EAGAIN: "EAGAIN, no thread or stack memory left"
        case EINVAL: "EINVAL, an invalid stack size"
        case EPERM: "EPERM"
        default: "\(code)"
        }
    }
}

/// The one way this package runs blocking work on a thread of its own (an event loop, a store
/// worker, the relay's log writer and Redis connection, a blocking stop): a named pthread with
/// a stack of a known size, joined when its owner shuts down.
///
/// Every `pthread_create` of the package is here, so each thread is named for `top -H`, perf and
/// debuggers, none inherits whatever stack `ulimit -s` gives, and a thread that cannot be
/// started is a `PushThreadError` for the caller to answer — never the body run on the
/// caller's thread instead (which would block it, perhaps forever).
///
/// Joining: `join()` blocks until the thread has ended (`pthread_join`); `joined()` suspends
/// the calling task until the body has returned and then joins, which waits only for the
/// thread's return from its start routine. A handle released without being joined detaches
/// the thread, which then ends on its own.
package final class PushThread: Sendable {
    /// The stack every thread of ours gets unless its owner asks otherwise: what Linux gives
    /// a thread by default (`ulimit -s` of 8 MiB), made independent of the host's limit.
    package static let standardStackSize = 8 << 20

    package let name: String
    private let thread: PlatformThread
    private let state: WaitableLocked<ThreadLife>

    private init(name: String, thread: PlatformThread, state: WaitableLocked<ThreadLife>) {
        self.name = name
        self.thread = thread
        self.state = state
    }

    deinit {
        // Nobody joins it any more: let the system reclaim it when it ends.
        let joinable = state.withLock { state -> Bool in
            guard case .joinable = state.join else { return false }
            state.join = .detached
            return true
        }
        if joinable { thread.detach() }
    }

    /// Starts `body` on a new thread named `name` (at most 15 bytes are kept) with a stack of
    /// `stackSize` bytes.
    ///
    /// - Throws: `PushThreadError` when the system refuses the thread or the stack size; the
    ///   body is then dropped without running.
    package static func start(
        name: String, stackSize: Int = standardStackSize, _ body: sending @escaping () -> Void
    ) throws(PushThreadError) -> PushThread {
        let state = WaitableLocked(ThreadLife())
        let start = Unmanaged.passRetained(ThreadStart(name: name, body: body, life: state)).toOpaque()
        let thread: PlatformThread
        do {
            thread = try Platform.createThread(stackSize: stackSize, argument: start, main: threadMain)
        } catch {
            Unmanaged<ThreadStart>.fromOpaque(start).release()
            throw PushThreadError(name: name, call: error.call, code: error.code)
        }
        return PushThread(name: name, thread: thread, state: state)
    }

    /// Runs `body` on a new thread, suspends the calling task until it has returned, joins the
    /// thread and returns the body's result: blocking work kept off the concurrency pool.
    package static func run<Result: Sendable>(
        name: String, stackSize: Int = standardStackSize, _ body: @escaping @Sendable () -> Result
    ) async throws(PushThreadError) -> Result {
        let started = Locked<PushThread?>(nil)
        let outcome = await withUnsafeContinuation { (continuation: UnsafeContinuation<Swift.Result<Result, PushThreadError>, Never>) in
            do throws(PushThreadError) {
                let thread = try start(name: name, stackSize: stackSize) { continuation.resume(returning: .success(body())) }
                started.withLock { $0 = thread }
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        // Set before the task resumed: a continuation resumed early resumes its task only after
        // the closure above has returned.
        await started.withLock({ $0 })?.joined()
        return try outcome.get()
    }

    /// Blocks until the thread has ended, then returns (at once if it already was joined).
    /// Blocks: call it off the concurrency pool. Called on the thread itself, it detaches it.
    package func join() {
        let me = thread.isCurrent
        let mine = state.withLock { state -> Bool in
            guard case .joinable = state.join else { return false }
            if me {
                state.join = .detached
                thread.detach()
                return false
            }
            state.join = .joining
            return true
        }
        if me { return }
        guard mine else {
            state.wait(
                until: { state in
                    switch state.join {
                    case .joined: true
                    case .detached: state.ended
                    case .joinable, .joining: false
                    }
                }, then: { _ in })
            return
        }
        thread.join()
        state.withLock { $0.join = .joined }
        state.broadcast()
    }

    /// Suspends the calling task until the body has returned, then joins the thread (which by
    /// then only has its start routine left to return from).
    package func joined() async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let ended = state.withLock { state -> Bool in
                if state.ended { return true }
                state.endWaiters.append(continuation)
                return false
            }
            if ended { continuation.resume() }
        }
        join()
    }

    /// Whether the body has returned (for tests and diagnostics).
    package var hasEnded: Bool { state.withLock { $0.ended } }
}

/// The C entry point of every thread: names it, runs the body, releases what the body held,
/// then tells those waiting.
private func threadMain(_ raw: UnsafeMutableRawPointer) {
    let start = Unmanaged<ThreadStart>.fromOpaque(raw).takeRetainedValue()
    Platform.nameThisThread(start.name)
    start.body?()
    // Release the body's captures (a loop, a connection) before anyone is told it ended.
    start.body = nil
    let waiters = start.life.withLock { life in
        life.ended = true
        defer { life.endWaiters = [] }
        return life.endWaiters
    }
    start.life.broadcast()
    for waiter in waiters { waiter.resume() }
}

/// Where a thread is in its life, shared by its handle and the thread.
private struct ThreadLife: Sendable {
    /// The body has returned and released what it captured.
    var ended = false
    var join = Join.joinable
    var endWaiters: [UnsafeContinuation<Void, Never>] = []

    enum Join: Sendable {
        case joinable
        /// A caller is in `pthread_join`.
        case joining
        case joined
        /// Released unjoined, or "joined" from itself: it ends on its own.
        case detached
    }
}

/// What a new thread runs, handed to it through `pthread_create`'s argument.
private final class ThreadStart {
    /// At most 15 bytes (the kernel's limit), cut on a character boundary.
    let name: String
    var body: (() -> Void)?
    let life: WaitableLocked<ThreadLife>

    init(name: String, body: @escaping () -> Void, life: WaitableLocked<ThreadLife>) {
        var short = ""
        for character in name {
            guard short.utf8.count + character.utf8.count <= 15 else { break }
            short.append(character)
        }
        self.name = short
        self.body = body
        self.life = life
    }
}
