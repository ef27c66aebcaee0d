/// A way out of the hub: the relay, direct APNs or direct FCM. The dispatcher hands each
/// transport the deliveries of one event; the transport sends them with at most its
/// concurrency in flight and answers one `PushResult` per delivery, in order. It never throws:
/// every problem is a per-device `failed`.
///
/// Every transport sends through the one `DeliveryPipeline` (the window that refills as each
/// delivery ends, backoff, retries, the log record), so a request that is never answered delays
/// nobody but itself on every channel alike. Per-batch work happens once:
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
package typealias PushDraft = PipelineDraft<PushDelivery>

extension PushTransport {
    /// Sends deliveries that already exist (tests, the bench).
    package func send(_ deliveries: [PushDelivery]) async -> [PushResult] {
        await send(count: deliveries.count, window: .max) { .deliver(deliveries[$0]) }
    }
}
