import Glibc

/// Runs blocking work (joining libmicrohttpd's threads, waiting for a signal) on a thread of its
/// own, so no Swift concurrency thread ever blocks on it; the caller awaits the result.
package enum RelayThread {
    private final class Work: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Runs `body` on a new detached thread and returns what it returned.
    package static func run<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result, Never>) in
            start { continuation.resume(returning: body()) }
        }
    }

    /// Starts `body` on a new detached thread (or runs it here if no thread can be had).
    package static func start(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Work(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                Unmanaged<Work>.fromOpaque(context).takeRetainedValue().body()
                return nil
            }, context)
        if rc == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Work>.fromOpaque(context).takeRetainedValue().body()
        }
    }
}
