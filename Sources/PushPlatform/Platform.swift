import CHapiPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The package's one tie to the operating system: everything that differs between Linux, Darwin
/// and the rest is named here (and in the selector backends beside it), so no other module
/// does. Laid out as swift-nio lays out NIOPosix: one `PlatformSelector` protocol with one file
/// per backend (`SelectorEpoll.swift` on Linux, `SelectorPoll.swift` elsewhere and under
/// `HAPI_PUSH_PORTABLE`), the calls only Darwin has in `Platform+Darwin.swift`, their
/// counterparts on every other system in `Platform+POSIX.swift`; C shims split the same way
/// (`CHapiEpoll` for the epoll backend alone, `CHapiPlatform` for the rest).
package enum Platform {
    /// The process's soft file-descriptor limit (`RLIMIT_NOFILE`); nil if unknown.
    package static var descriptorLimit: Int? {
        let limit = hapi_descriptor_limit()
        return limit > 0 ? Int(limit) : nil
    }

    /// Raises the soft file-descriptor limit to the hard one; the soft limit now in force (nil
    /// if unknown).
    package static func raiseDescriptorLimit() -> Int? {
        let limit = hapi_raise_descriptor_limit()
        return limit > 0 ? Int(limit) : nil
    }

    /// A spin-wait hint to the CPU (x86 `pause`, ARM `yield`), for a thread polling briefly
    /// before it sleeps.
    @inline(__always)
    package static func cpuRelax() {
        hapi_cpu_relax()
    }
}
