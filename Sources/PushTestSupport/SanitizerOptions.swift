import Foundation

/// The sanitizer settings of the test process (`TSAN_OPTIONS`, `ASAN_OPTIONS`, `LSAN_OPTIONS`,
/// `UBSAN_OPTIONS`), for a binary of ours that a test starts with an environment of its own.
///
/// Under `make test-sanitize` the relay and the CLI are built with the sanitizer too: without
/// these they would run without the suppressions (the Swift runtime's own continuation race, the
/// toolchain's leaks) and with the default exit code, so a report the suite suppresses in
/// itself would fail the child instead.
public enum SanitizerOptions {
    public static var inherited: [String: String] {
        ProcessInfo.processInfo.environment.filter { $0.key.hasSuffix("SAN_OPTIONS") }
    }

    /// `environment` with the test process's sanitizer settings added (its own win).
    public static func adding(to environment: [String: String]) -> [String: String] {
        environment.merging(inherited) { own, _ in own }
    }
}
