import PushSync

/// A way out of the hub: the relay, direct APNs or direct FCM. The dispatcher hands each
/// transport the deliveries of one event; the transport sends them with at most its
/// concurrency in flight and answers one `PushResult` per delivery, in order. It never throws:
/// every problem is a per-device `failed`.
///
/// No head-of-line blocking: the in-flight limit is a window that refills as each request
/// ends, every request has its own deadline, and a retry waits only for its own backoff, so a
/// request that is never answered delays nobody but itself. Per-batch work still happens once:
/// the APNs provider token and the FCM access token are fetched once per batch, and an OAuth
/// failure fails the batch once instead of once per device.
package protocol PushTransport: Sendable {
    /// `relay`, `apns` or `fcm`: what reports and logs call it.
    var name: PushTransportName { get }

    /// Sends `count` deliveries. `draft(i)` makes delivery `i` only when the window has room
    /// for it (the dispatcher seals envelopes there, so at most `window` of them exist at a
    /// time, and on every core); it may refuse instead (a seal that failed), which is answered
    /// as is and neither sent nor logged. At most `min(concurrency, window)` are in flight.
    func send(count: Int, window: Int, draft: @escaping @Sendable (Int) -> PushDraft) async -> [PushResult]
}

/// One delivery as the dispatcher hands it over, made at the moment it can be sent.
package enum PushDraft: Sendable {
    case deliver(PushDelivery)
    /// Failed before any request (no envelope could be sealed): the result to report.
    case refused(PushResult)
}

extension PushTransport {
    /// Sends deliveries that already exist (tests, the bench).
    package func send(_ deliveries: [PushDelivery]) async -> [PushResult] {
        await send(count: deliveries.count, window: .max) { .deliver(deliveries[$0]) }
    }
}

/// Runs `operation` for `0..<count` with at most `limit` in flight, starting the next as soon
/// as any one ends; results in index order. One slow element delays only itself.
///
/// `limit` workers, each taking the next index when its last one ends: no task and no wakeup
/// of a coordinating task per element.
func window<Result: Sendable>(_ count: Int, limit: Int, _ operation: @escaping @Sendable (Int) async -> Result) async -> [Result] {
    guard count > 0 else { return [] }
    let next = Locked(0)
    let workers = min(max(1, limit), count)
    return await withTaskGroup(of: [(Int, Result)].self) { group in
        for _ in 0..<workers {
            group.addTask {
                var done: [(Int, Result)] = []
                while true {
                    let index = next.withLock { value -> Int? in
                        guard value < count else { return nil }
                        value += 1
                        return value - 1
                    }
                    guard let index else { return done }
                    done.append((index, await operation(index)))
                }
            }
        }
        var results = [Result?](repeating: nil, count: count)
        for await done in group { for (index, result) in done { results[index] = result } }
        return results.compactMap { $0 }
    }
}

extension String {
    /// `https://host/` and `https://host//` name the same base as `https://host`.
    var droppingTrailingSlashes: String {
        var text = self
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}

extension PushDraft {
    /// Every delivery of a batch failed before any request (no provider token, no OAuth
    /// token): each drafted delivery gets `result` and is logged; one refused while drafting
    /// keeps its own.
    static func refuseAll(
        _ count: Int, draft: (Int) -> PushDraft, logger: any PushLogger, transport: PushTransportName, _ result: PushResult
    ) -> [PushResult] {
        (0..<count).map { index in
            switch draft(index) {
            case .refused(let own): return own
            case .deliver(let delivery):
                logger.log(delivery, transport: transport, result)
                return result
            }
        }
    }
}
