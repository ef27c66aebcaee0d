import Glibc
import PushSync

/// Writes log lines to a file descriptor (stdout by default) from a thread of its own, so a
/// slow reader of the log (a pipe, journald) never blocks a push. Lines queue in memory up to
/// a bound; beyond it they are dropped and counted, and the count is written when there is room.
final class RelayLogWriter: @unchecked Sendable {
    // @unchecked: the semaphores are thread-safe by design; everything else is locked or let.
    private struct Queue {
        var lines: [String] = []
        var dropped = 0
        var closing = false
        var closed = false
    }

    static let maximumQueuedLines = 10_000

    private let descriptor: Int32
    private let queue = Locked(Queue())
    private let signal: UnsafeMutablePointer<sem_t>
    private let done: UnsafeMutablePointer<sem_t>

    init(descriptor: Int32 = STDOUT_FILENO) {
        self.descriptor = descriptor
        signal = .allocate(capacity: 1)
        done = .allocate(capacity: 1)
        sem_init(signal, 0, 0)
        sem_init(done, 0, 0)
        RelayThread.start { [self] in run() }
    }

    deinit {
        sem_destroy(signal)
        sem_destroy(done)
        signal.deallocate()
        done.deallocate()
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
        if queued { sem_post(signal) }
    }

    /// Writes what is queued, stops the thread and returns when it has (blocks: call it off the
    /// concurrency pool, e.g. through `RelayThread.run`). Idempotent.
    func close() {
        let first = queue.withLock { queue -> Bool in
            guard !queue.closing else { return false }
            queue.closing = true
            return true
        }
        guard first else { return }
        sem_post(signal)
        while sem_wait(done) != 0 && errno == EINTR {}
    }

    private func run() {
        while true {
            while sem_wait(signal) != 0 && errno == EINTR {}
            let (lines, dropped, closing) = queue.withLock { queue -> ([String], Int, Bool) in
                defer {
                    queue.lines.removeAll(keepingCapacity: true)
                    queue.dropped = 0
                }
                return (queue.lines, queue.dropped, queue.closing)
            }
            var text = lines.joined(separator: "\n")
            if !lines.isEmpty { text += "\n" }
            if dropped > 0 { text += "log: \(dropped) lines dropped (the log reader is too slow)\n" }
            writeAll(Array(text.utf8))
            if closing {
                queue.withLock { $0.closed = true }
                sem_post(done)
                return
            }
        }
    }

    private func writeAll(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glibc.write(descriptor, raw.baseAddress.map { $0 + offset }, bytes.count - offset)
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
