import PushSync

/// A task that ticks every 10 ms: it keeps its pace only while the cooperative pool has a free
/// thread, so a test can show that work waiting on a lock elsewhere blocks no pool thread.
public final class PaceTicker: Sendable {
    private let count = Locked(0)
    private let task: Task<Void, Never>

    public init() {
        let count = self.count
        task = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(10))
                count.withLock { $0 += 1 }
            }
        }
    }

    /// Ticks so far.
    public var ticks: Int { count.withLock { $0 } }

    public func stop() { task.cancel() }

    deinit { task.cancel() }
}
