import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushSync

/// `hapi-push-testsupport registry-lock`: another process holding SQLite's write lock until
/// told to let go (a line on its stdin); killed if it outlives the test.
public final class SQLiteLockHolder: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let released = Locked(false)

    /// Starts the holder next to the running test binary and waits (up to 10 s) until it holds the lock.
    public init(path: String) throws {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while directory.pathExtension == "xctest" || directory.lastPathComponent == "MacOS" { directory = directory.deletingLastPathComponent() }
        process.executableURL = directory.appendingPathComponent("hapi-push-testsupport")
        process.arguments = ["registry-lock", "--path", path]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Up to 10 s for its "locked" line.
        let fd = output.fileHandleForReading.fileDescriptor
        var seen: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while !String(decoding: seen, as: UTF8.self).contains("locked\n"), ContinuousClock.now < deadline {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 50) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            seen += buffer[..<count]
        }
        guard String(decoding: seen, as: UTF8.self).contains("locked\n") else {
            Platform.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw LockHolderError(output: String(decoding: seen, as: UTF8.self))
        }
    }

    deinit {
        if process.isRunning {
            Platform.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Lets go of the lock and waits for the holder to exit (once; later calls do nothing).
    public func release() {
        let first = released.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        input.fileHandleForWriting.write(Data("go\n".utf8))
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    public struct LockHolderError: Error, CustomStringConvertible {
        public let output: String
        public var description: String { "the lock holder did not report \"locked\": \(output)" }
    }
}
