import Foundation
import Testing

/// Every thread of the package starts through `PushThread` (on the platform layer's one
/// `pthread_create`) and nothing waits on a POSIX
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

    /// The one `pthread_create` is the platform layer's (`Platform.createThread`: glibc's and
    /// Darwin's spellings, each in its system's file), and `PushThread` its only caller.
    @Test func pthreadCreateAppearsOnlyInThePrimitive() throws {
        let files = try Self.swiftSources()
        try #require(files.count > 50, "found only \(files.count) sources under \(Self.sources.path)")
        let spellings: Set<String> = ["PushPlatform/Platform+POSIX.swift", "PushPlatform/Platform+Darwin" + ".swift"]
        // Prose (a thrown error's `call`, a doc comment) may name it; only these files call it.
        let callers = files.filter { $0.text.contains("pthread_create(") }.map(\.path)
        #expect(Set(callers) == spellings, "pthread_create( in \(callers.sorted())")
        let users = files.filter { $0.text.contains("Platform.createThread(") }.map(\.path)
        #expect(users == ["PushSync/PushThread.swift"], "Platform.createThread( in \(users.sorted())")
    }

    @Test func noPOSIXSemaphores() throws {
        let pattern = try Regex(#"\bsem_(t|init|open|wait|trywait|timedwait|post|destroy)\b"#)
        let offenders = try Self.swiftSources().filter { $0.text.contains(pattern) }.map(\.path)
        #expect(offenders.isEmpty, "POSIX semaphores (invisible as state, one wake per post): \(offenders)")
    }
}
