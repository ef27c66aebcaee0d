#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a `pthread_mutex_t`.
///
/// Why not `Synchronization.Mutex`: on Linux it locks with raw futexes that ThreadSanitizer
/// cannot see, so every access under it is reported as a race and `make test-sanitize` would
/// drown real findings. A pthread mutex is intercepted by TSan, costs the same uncontended,
/// and keeps the sanitizer runs meaningful.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is only touched while `mutex` is held, and it is `Sendable`, so what
    // `withLock` hands out may leave the lock safely (the bound swift-nio's
    // `NIOLockedValueBox` has too).
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
