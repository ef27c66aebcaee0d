#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a `pthread_mutex_t`, with a `pthread_cond_t` for threads that must wait until
/// the value says they may go on (a queue has lines, a start has finished).
///
/// Why not a POSIX semaphore: a semaphore counts posts, not states, so a waiter that wants "the
/// queue is not empty or we are closing" wakes once per post and re-checks anyway; and
/// ThreadSanitizer sees a pthread mutex and condition as synchronization, so everything written
/// under the lock before `broadcast` is ordered before what the woken thread reads.
package final class WaitableLocked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is only touched while `mutex` is held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deinitialize(count: 1)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value (never waits for a condition).
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Wakes every thread blocked in `wait`; each re-checks its condition. Call it after a
    /// `withLock` that changed what a waiter waits for (cheap when nobody waits).
    package func broadcast() {
        pthread_cond_broadcast(condition)
    }

    /// Blocks the calling thread until `ready` holds for the value, then runs `body` with the
    /// lock still held. Blocks: never call it on a Swift concurrency thread.
    package func wait<Result>(until ready: (Value) -> Bool, then body: (inout Value) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready(value) { pthread_cond_wait(condition, mutex) }
        return body(&value)
    }
}
