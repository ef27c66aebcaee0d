#if canImport(Glibc)
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#endif

/// `precondition` that also says why in optimized builds (where `precondition` drops its
/// message): prints to stderr, then aborts so libFuzzer records the input as a crash.
public func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    guard !condition else { return }
    violated(message())
}

/// Reports a violated property and aborts.
public func violated(_ message: String) -> Never {
    let line = Array("fuzz property violated: \(message)\n".utf8)
    _ = write(2, line, line.count)
    abort()
}
