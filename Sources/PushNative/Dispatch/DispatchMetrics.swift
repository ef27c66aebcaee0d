import PushSync
import PushTransports

/// The dispatcher's side of `PushMetricsFactory`: the handlers it needs, made once per label
/// set and kept (a factory is asked again only for a label set it has not seen). The
/// in-flight meter is the transports' own (`ProviderCall`), counting HTTP requests.
struct DispatchMetrics: Sendable {
    static let deliveries = "hapi_push_deliveries_total"
    static let duration = "hapi_push_delivery_duration_seconds"
    static let pruneFailures = "hapi_push_prune_failures_total"

    private struct Handlers {
        var counters: [[String]: any PushCounterHandler] = [:]
        var timers: [PushTransportName: any PushTimerHandler] = [:]
        var pruneFailures: [PushTransportName: any PushCounterHandler] = [:]
    }

    let factory: (any PushMetricsFactory)?
    private let handlers = Locked(Handlers())

    init(_ factory: (any PushMetricsFactory)?) { self.factory = factory }

    func delivered(_ delivery: PushDispatchReport.Delivery, sent: Bool, latency: Duration) {
        delivered(transport: delivery.transport, outcome: delivery.outcome, reason: delivery.reason, sent: sent, latency: latency)
    }

    /// One delivery of any channel (the native ones and Web Push): counted by transport,
    /// outcome and reason; timed per transport when a request was made (`sent`).
    func delivered(transport: PushTransportName, outcome: PushDeliveryOutcome, reason: PushDeliveryReason?, sent: Bool, latency: Duration) {
        guard let factory else { return }
        let labels = [transport.rawValue, outcome.rawValue, reason?.rawValue ?? "none"]
        let (counter, timer) = handlers.withLock { handlers -> (any PushCounterHandler, (any PushTimerHandler)?) in
            let counter =
                handlers.counters[labels]
                ?? factory.makeCounter(
                    label: Self.deliveries, dimensions: [("transport", labels[0]), ("outcome", labels[1]), ("reason", labels[2])])
            handlers.counters[labels] = counter
            guard sent else { return (counter, nil) }
            let timer = handlers.timers[transport] ?? factory.makeTimer(label: Self.duration, dimensions: [("transport", transport.rawValue)])
            handlers.timers[transport] = timer
            return (counter, timer)
        }
        counter.increment(by: 1)
        if let timer {
            let (seconds, attoseconds) = latency.components
            timer.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        }
    }

    func pruneFailed(_ transport: PushTransportName) {
        guard let factory else { return }
        let counter = handlers.withLock { handlers in
            let counter =
                handlers.pruneFailures[transport]
                ?? factory.makeCounter(label: Self.pruneFailures, dimensions: [("transport", transport.rawValue)])
            handlers.pruneFailures[transport] = counter
            return counter
        }
        counter.increment(by: 1)
    }
}
