/// Where the library counts what it does, shaped like swift-metrics' `MetricsFactory` so a hub
/// bridges it in a few lines (each method maps onto the factory method of the same name, each
/// handler onto the swift-metrics handler of the same name) without this package depending on
/// swift-metrics. `PushPrometheusMetrics` is a ready implementation that renders the Prometheus
/// text format.
///
/// What is counted (labels in parentheses):
/// - `hapi_push_deliveries_total` (transport, outcome, reason): a counter per device of every
///   dispatch; `reason` is `none` when there is nothing to say.
/// - `hapi_push_delivery_duration_seconds` (transport): a timer per send, retries included.
/// - `hapi_push_requests_in_flight` (transport): a meter of HTTP requests handed to the client
///   and not yet answered (retries included).
/// - `hapi_push_prune_failures_total` (transport): dead tokens whose registration could not be
///   removed.
///
/// Handlers are made once per label set and kept, as swift-metrics' own types do.
public protocol PushMetricsFactory: Sendable {
    func makeCounter(label: String, dimensions: [(String, String)]) -> any PushCounterHandler
    func makeTimer(label: String, dimensions: [(String, String)]) -> any PushTimerHandler
    func makeMeter(label: String, dimensions: [(String, String)]) -> any PushMeterHandler
}

/// A monotonically increasing count (swift-metrics' `CounterHandler`).
public protocol PushCounterHandler: AnyObject, Sendable {
    func increment(by amount: Int64)
    func reset()
}

/// Durations (swift-metrics' `TimerHandler`).
public protocol PushTimerHandler: AnyObject, Sendable {
    func recordNanoseconds(_ duration: Int64)
}

/// A value that goes up and down (swift-metrics' `MeterHandler`, the settable gauge).
public protocol PushMeterHandler: AnyObject, Sendable {
    func set(_ value: Double)
    func increment(by amount: Double)
    func decrement(by amount: Double)
}
