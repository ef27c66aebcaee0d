#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushSync

/// Writes log lines to a file descriptor (stdout by default) from a thread of its own, so a
/// slow reader of the log (a pipe, journald) never blocks a push. Lines queue in memory up to
/// a bound; beyond it they are dropped and counted, and the count is written when there is room.
final class RelayLogWriter: Sendable {
    private struct Queue: Sendable {
        var lines: [String] = []
        var dropped = 0
        var closing = false
    }

    static let maximumQueuedLines = 10_000

    /// Shared with the writing thread, which never holds the writer itself: a writer released
    /// without `close` closes, and its thread writes what is queued and ends on its own.
    private let queue: WaitableLocked<Queue>
    private let thread: PushThread

    /// Starts the writing thread.
    ///
    /// - Throws: `PushThreadError` when the system gives no thread (nothing could be logged).
    init(descriptor: Int32 = STDOUT_FILENO) throws(PushThreadError) {
        let queue = WaitableLocked(Queue())
        self.queue = queue
        thread = try PushThread.start(name: "hapi-relay-log") { Self.run(queue, descriptor: descriptor) }
    }

    deinit {
        beginClose()
    }

    /// Queues one line (a newline is added).
    func write(_ line: String) {
        let queued = queue.withLock { queue -> Bool in
            guard !queue.closing else { return false }
            guard queue.lines.count < Self.maximumQueuedLines else {
                queue.dropped += 1
                return false
            }
            queue.lines.append(line)
            return true
        }
        if queued { queue.broadcast() }
    }

    /// Stops taking lines; the thread writes what is queued and ends. Returns at once. Idempotent.
    func beginClose() {
        let first = queue.withLock { queue -> Bool in
            guard !queue.closing else { return false }
            queue.closing = true
            return true
        }
        if first { queue.broadcast() }
    }

    /// Writes what is queued, stops the thread and returns once it has been joined (the
    /// calling task suspends meanwhile). Idempotent.
    func close() async {
        beginClose()
        await thread.joined()
    }

    private static func run(_ queue: WaitableLocked<Queue>, descriptor: Int32) {
        while true {
            let (lines, dropped, closing) = queue.wait(until: { !$0.lines.isEmpty || $0.closing }) { queue -> ([String], Int, Bool) in
                defer {
                    queue.lines.removeAll(keepingCapacity: true)
                    queue.dropped = 0
                }
                return (queue.lines, queue.dropped, queue.closing)
            }
            var text = lines.joined(separator: "\n")
            if !lines.isEmpty { text += "\n" }
            if dropped > 0 { text += "log: \(dropped) lines dropped (the log reader is too slow)\n" }
            writeAll(Array(text.utf8), to: descriptor)
            if closing { return }
        }
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Platform.write(descriptor, raw.baseAddress.map { $0 + offset }, bytes.count - offset)
            }
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return  // the reader is gone: drop the rest
            }
        }
    }
}
