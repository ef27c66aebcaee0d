import Foundation
import Testing

/// Every thread of the package starts through `PushThread` and nothing waits on a POSIX
/// semaphore: checked on the sources, so a new hand-rolled `pthread_create` or `sem_t` fails
/// here instead of in review.
@Suite struct ThreadSourceScanTests {
    /// The package's `Sources` directory, from this file's path.
    private static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// Every Swift source, by its path under `Sources`.
    private static func swiftSources() throws -> [(path: String, text: String)] {
        guard let walker = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil) else { return [] }
        var files: [(String, String)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let path = String(url.standardizedFileURL.path.dropFirst(sources.standardizedFileURL.path.count + 1))
            files.append((path, try String(contentsOf: url, encoding: .utf8)))
        }
        return files
    }

    @Test func pthreadCreateAppearsOnlyInThePrimitive() throws {
        let files = try Self.swiftSources()
        try #require(files.count > 50, "found only \(files.count) sources under \(Self.sources.path)")
        let allowed: Set<String> = ["PushSync/PushThread.swift"]
        let offenders = files.filter { $0.text.contains("pthread_create") && !allowed.contains($0.path) }.map(\.path)
        #expect(offenders.isEmpty, "pthread_create outside PushThread: \(offenders)")
        #expect(files.contains { $0.path == "PushSync/PushThread.swift" && $0.text.contains("pthread_create(") })
    }

    @Test func noPOSIXSemaphores() throws {
        let pattern = try Regex(#"\bsem_(t|init|open|wait|trywait|timedwait|post|destroy)\b"#)
        let offenders = try Self.swiftSources().filter { $0.text.contains(pattern) }.map(\.path)
        #expect(offenders.isEmpty, "POSIX semaphores (invisible as state, one wake per post): \(offenders)")
    }
}
