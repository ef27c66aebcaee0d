#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a thread could not be started: the call that refused and its error number.
package struct PlatformThreadError: Error, Sendable, Equatable {
    package let call: String
    package let code: Int32
}

/// A started thread, joined or detached once. `pthread_t` stays inside: an integer on glibc, a
/// pointer on Darwin.
package struct PlatformThread: @unchecked Sendable {
    let handle: pthread_t

    /// Waits for the thread to end.
    package func join() { pthread_join(handle, nil) }

    /// Lets the system reclaim the thread when it ends; nobody joins it.
    package func detach() { pthread_detach(handle) }

    /// Whether the calling thread is this one.
    package var isCurrent: Bool { pthread_equal(pthread_self(), handle) != 0 }
}

extension Platform {
    /// Starts a thread running `main(argument)` on a stack of `stackSize` bytes. The package's
    /// one `pthread_create`: `pthread_t` is an integer on glibc and a pointer on Darwin, and the
    /// start routine's argument optional on one and not the other, so each system's spelling is
    /// its own (`startThread`, in Platform+POSIX.swift and Platform+Darwin.swift).
    package static func createThread(
        stackSize: Int, argument: UnsafeMutableRawPointer, main: @escaping @convention(c) (UnsafeMutableRawPointer) -> Void
    ) throws(PlatformThreadError) -> PlatformThread {
        // Allocated, not a Swift value: glibc's headers also declare `pthread_attr_t` in the
        // epoll shim's, and the value's initializer would be looked up there.
        let attributes = UnsafeMutablePointer<pthread_attr_t>.allocate(capacity: 1)
        defer { attributes.deallocate() }
        pthread_attr_init(attributes)
        defer { pthread_attr_destroy(attributes) }
        let sized = pthread_attr_setstacksize(attributes, stackSize)
        guard sized == 0 else { throw PlatformThreadError(call: "pthread_attr_setstacksize", code: sized) }
        let entry = UnsafeMutablePointer<ThreadEntry>.allocate(capacity: 1)
        entry.initialize(to: ThreadEntry(main: main, argument: argument))
        switch startThread(attributes, entry: UnsafeMutableRawPointer(entry)) {
        case .success(let thread): return PlatformThread(handle: thread)
        case .failure(let failure):
            entry.deinitialize(count: 1)
            entry.deallocate()
            throw PlatformThreadError(call: "pthread_create", code: failure.code)
        }
    }
}

/// What `createThread` hands the new thread: the routine to run and its argument.
struct ThreadEntry {
    let main: @convention(c) (UnsafeMutableRawPointer) -> Void
    let argument: UnsafeMutableRawPointer
}

/// The new thread's first frame on every system: takes its `ThreadEntry` and runs it.
func runThreadEntry(_ raw: UnsafeMutableRawPointer) {
    let entry = raw.assumingMemoryBound(to: ThreadEntry.self)
    let (main, argument) = (entry.pointee.main, entry.pointee.argument)
    entry.deinitialize(count: 1)
    entry.deallocate()
    main(argument)
}

/// An error number from a call that reports one as its result.
struct ThreadStartCode: Error {
    let code: Int32
}
