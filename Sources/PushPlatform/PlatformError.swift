#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A system call of the platform layer failed: which, and its errno.
package struct PlatformError: Error, Sendable, Equatable, CustomStringConvertible {
    package let call: String
    package let code: Int32

    package init(call: String, code: Int32) {
        self.call = call
        self.code = code
    }

    /// The failure with the current errno.
    package static func last(_ call: String) -> PlatformError {
        PlatformError(call: call, code: errno)
    }

    package var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
}
