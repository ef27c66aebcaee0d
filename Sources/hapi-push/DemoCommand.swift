import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `hapi-push demo`: kept as a command (a contract), but the demo is its own executable,
/// `hapi-push-demo`, so this binary links neither the loopback server nor the test keys. This
/// replaces the process with the `hapi-push-demo` next to it.
enum DemoCommand {
    static let usage = """
        Usage: hapi-push demo

        Runs the golden envelope and a full dispatch against loopback stand-ins for the relay, APNs and FCM.
        The demo is the separate executable hapi-push-demo (make demo builds and runs it); this command runs
        the one installed next to hapi-push.
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            return ExitCode.success.rawValue
        }
        guard arguments.isEmpty else { throw UsageError("demo takes no options") }
        let own = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let demo = own.deletingLastPathComponent().appendingPathComponent("hapi-push-demo").path
        guard FileManager.default.isExecutableFile(atPath: demo) else {
            throw CommandFailure("hapi-push-demo is not installed next to hapi-push (\(demo)): run 'make demo'")
        }
        fflush(nil)  // everything printed so far, before the process is replaced
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(demo), nil]
        execv(demo, argv)
        // Only reached when exec failed.
        let reason = String(cString: strerror(errno))
        for pointer in argv { free(pointer) }
        throw CommandFailure("cannot run \(demo): \(reason)")
    }
}
