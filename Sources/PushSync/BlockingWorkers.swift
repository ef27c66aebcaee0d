import PushPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A few dedicated threads (`PushThread`s) that run blocking work (SQLite, libpq) so that no
/// Swift concurrency thread ever waits on a busy database or a slow server: callers enqueue a
/// job and suspend on a continuation until a worker has run it.
///
/// Each worker owns one `Resource` (a database connection), made on its own thread by
/// `makeResource` and touched only by that thread, so a resource needs no lock of its own.
/// Jobs run in arrival order on whichever worker is free. Workers finish the queued jobs and
/// exit when the value is released.
package final class BlockingWorkers<Resource>: @unchecked Sendable {
    // @unchecked: `queue`, `stopping` and `running` are only touched under `mutex`; each
    // resource lives on the stack of its own worker thread.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let wakeup = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let state: State
    /// The workers' threads: released unjoined with the value (they end on their own once the
    /// queue is drained), or joined by `shutdown`.
    private let threads: [PushThread]

    /// The queue and the flags, shared with the threads (which must not keep `self` alive).
    private final class State: @unchecked Sendable {
        let mutex: UnsafeMutablePointer<pthread_mutex_t>
        let wakeup: UnsafeMutablePointer<pthread_cond_t>
        var queue: [Job] = []
        var head = 0
        var stopping = false
        var running = 0
        var idle = 0
        /// Jobs ever enqueued (wrapping): what an idle worker polls before it sleeps.
        let enqueued = Atomic<Int>(0)

        init(mutex: UnsafeMutablePointer<pthread_mutex_t>, wakeup: UnsafeMutablePointer<pthread_cond_t>) {
            self.mutex = mutex
            self.wakeup = wakeup
        }

        deinit {
            pthread_cond_destroy(wakeup)
            pthread_mutex_destroy(mutex)
            wakeup.deallocate()
            mutex.deallocate()
        }
    }

    /// A queued job: runs with the worker's resource, or with nil if it can never run.
    typealias Job = (UnsafeMutablePointer<Resource>?) -> Void

    /// Starts `count` threads; `name` says whose they are (for a debugger's benefit).
    package init(name: String, count: Int, makeResource: @escaping @Sendable () -> Resource) {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(wakeup, nil)
        state = State(mutex: mutex, wakeup: wakeup)
        var threads: [PushThread] = []
        for _ in 0..<max(1, count) {
            let context = WorkerContext(state: state, makeResource: makeResource)
            // A thread the system refuses is not counted: with none, jobs get `unavailable`.
            guard let thread = try? PushThread.start(name: name, { context.main() }) else { continue }
            threads.append(thread)
            pthread_mutex_lock(mutex)
            state.running += 1
            pthread_mutex_unlock(mutex)
        }
        self.threads = threads
    }

    deinit {
        stop()
    }

    private func stop() {
        pthread_mutex_lock(mutex)
        state.stopping = true
        pthread_cond_broadcast(wakeup)
        pthread_mutex_unlock(mutex)
    }

    /// Lets the workers finish the jobs already queued (later ones get `unavailable`), then
    /// waits until every worker thread has ended and been joined.
    package func shutdown() async {
        stop()
        for thread in threads { await thread.joined() }
    }

    /// Runs `body` on a worker with its resource and returns its result; the calling task
    /// suspends meanwhile. If no worker thread could be started, `body` never runs and
    /// `unavailable` is thrown.
    package func run<Value: Sendable, Failure: Error>(
        unavailable: Failure, _ body: @escaping @Sendable (inout Resource) throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Value, Failure>, Never>) in
            enqueue { resource in
                guard let resource else { return continuation.resume(returning: .failure(unavailable)) }
                continuation.resume(returning: Result { () throws(Failure) -> Value in try body(&resource.pointee) })
            }
        }
        return try result.get()
    }

    /// Queues `body` without waiting for it: it runs on a worker with the worker's resource, or
    /// with nil if no worker can ever run it. For callers that resume their own waiters.
    package func post(_ body: @escaping @Sendable (UnsafeMutablePointer<Resource>?) -> Void) {
        enqueue(body)
    }

    private func enqueue(_ job: @escaping Job) {
        pthread_mutex_lock(mutex)
        guard state.running > 0, !state.stopping else {
            pthread_mutex_unlock(mutex)
            return job(nil)
        }
        state.queue.append(job)
        state.enqueued.wrappingAdd(1, ordering: .relaxed)
        if state.idle > 0 { pthread_cond_signal(wakeup) }
        pthread_mutex_unlock(mutex)
    }

    /// Runs `body` once on a fresh thread of its own (for one-off blocking work such as opening
    /// a store), joined before this returns; throws `unavailable` if the thread cannot be started.
    package static func runOnce<Value: Sendable, Failure: Error>(
        name: String, unavailable: Failure, _ body: @escaping @Sendable () throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        let outcome: Result<Value, Failure>
        do {
            outcome = try await PushThread.run(name: name) { Result { () throws(Failure) -> Value in try body() } }
        } catch {
            throw unavailable
        }
        return try outcome.get()
    }

    // MARK: - Threads

    private final class WorkerContext {
        let state: State
        let makeResource: @Sendable () -> Resource

        init(state: State, makeResource: @escaping @Sendable () -> Resource) {
            self.state = state
            self.makeResource = makeResource
        }

        /// Called and returning with the mutex held, the queue found empty: polls a counter of
        /// enqueued jobs for a few tens of microseconds before the thread goes to sleep, because a
        /// caller awaiting one job after another would otherwise pay a futex wake-up (and the
        /// worker a scheduling delay) for each. The poll makes no system call and takes no lock
        /// (a `sched_yield` loop handed the core to other processes on a loaded machine, and
        /// burnt its syscalls as CPU time).
        func spinForWork() -> Bool {
            let seen = state.enqueued.load(ordering: .relaxed)
            pthread_mutex_unlock(state.mutex)
            let deadline = monotonicNanoseconds() + idleSpinNanoseconds
            var moved = false
            repeat {
                for _ in 0..<32 { Platform.cpuRelax() }
                if state.enqueued.load(ordering: .relaxed) != seen {
                    moved = true
                    break
                }
            } while monotonicNanoseconds() < deadline
            pthread_mutex_lock(state.mutex)
            return moved || state.head < state.queue.count || state.stopping
        }

        func main() {
            var resource = makeResource()
            pthread_mutex_lock(state.mutex)
            while true {
                if state.head < state.queue.count {
                    let job = state.queue[state.head]
                    state.head += 1
                    if state.head > 64, state.head * 2 > state.queue.count {
                        state.queue.removeFirst(state.head)
                        state.head = 0
                    }
                    pthread_mutex_unlock(state.mutex)
                    withUnsafeMutablePointer(to: &resource) { job($0) }
                    pthread_mutex_lock(state.mutex)
                    continue
                }
                if state.stopping { break }
                if spinForWork() { continue }
                state.idle += 1
                pthread_cond_wait(state.wakeup, state.mutex)
                state.idle -= 1
            }
            state.running -= 1
            let orphans = state.running == 0 ? Array(state.queue[state.head...]) : []
            if state.running == 0 { state.queue.removeAll() }
            pthread_mutex_unlock(state.mutex)
            for job in orphans { job(nil) }
        }
    }
}

/// How long an idle worker polls for its next job before it sleeps.
private let idleSpinNanoseconds: UInt64 = 50_000

private func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
