import PushSync

/// A ready `PushMetricsFactory`: keeps every counter, timer and meter in memory and renders
/// them in the Prometheus text exposition format (0.0.4), for a hub that serves `/metrics`
/// itself instead of bridging to swift-metrics.
///
/// Timers become histograms in seconds (`_bucket`, `_sum`, `_count`). A metric keeps at most
/// `maximumSeriesPerMetric` label sets: a provider that invents a new reason per answer folds
/// into one series whose labels all read `other` instead of growing memory without bound.
public final class PushPrometheusMetrics: PushMetricsFactory {
    /// Upper bounds of every timer's histogram, in seconds.
    public static let durationBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    public static let maximumSeriesPerMetric = 1000

    private typealias Kind = PrometheusText.Kind
    private typealias Labels = PrometheusText.Labels

    private struct Family {
        let kind: Kind
        var series: [Labels: Series] = [:]
    }

    private enum Series {
        case counter(Counter)
        case timer(Timer)
        case meter(Meter)
    }

    private let families = Locked<[String: Family]>([:])

    public init() {}

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any PushCounterHandler {
        handler(label, dimensions, .counter, make: { .counter(Counter()) }) { series in
            if case .counter(let counter) = series { return counter }
            return nil
        } ?? Counter()
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any PushTimerHandler {
        handler(label, dimensions, .histogram, make: { .timer(Timer()) }) { series in
            if case .timer(let timer) = series { return timer }
            return nil
        } ?? Timer()
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any PushMeterHandler {
        handler(label, dimensions, .gauge, make: { .meter(Meter()) }) { series in
            if case .meter(let meter) = series { return meter }
            return nil
        } ?? Meter()
    }

    /// The series for `label` and `dimensions`, made on first use. A label already used for
    /// another kind of metric gets a detached handler (counted nowhere), never a crash.
    private func handler<Handler>(
        _ label: String, _ dimensions: [(String, String)], _ kind: Kind, make: () -> Series, _ cast: (Series) -> Handler?
    ) -> Handler? {
        let name = PrometheusText.metricName(label)
        return families.withLock { families -> Handler? in
            var family = families[name] ?? Family(kind: kind)
            guard family.kind == kind else { return nil }
            var key = Labels(dimensions)
            if family.series[key] == nil, family.series.count >= Self.maximumSeriesPerMetric {
                key = Labels(dimensions.map { ($0.0, "other") })
            }
            if let existing = family.series[key] { return cast(existing) }
            let series = make()
            family.series[key] = series
            families[name] = family
            return cast(series)
        }
    }

    /// Every metric, sorted by name and labels.
    public func render() -> String {
        let snapshot = families.withLock { $0 }
        var out = PrometheusText()
        for name in snapshot.keys.sorted() {
            guard let family = snapshot[name] else { continue }
            out.family(name, family.kind)
            for key in family.series.keys.sorted() {
                guard let series = family.series[key] else { continue }
                switch series {
                case .counter(let counter):
                    out.sample(name, key, counter.value)
                case .meter(let meter):
                    out.sample(name, key, value: PrometheusText.number(meter.value))
                case .timer(let timer):
                    let state = timer.snapshot
                    out.histogram(
                        name, key, bounds: Self.durationBuckets, cumulativeCounts: state.buckets, count: state.count,
                        sum: PrometheusText.number(state.sum))
                }
            }
        }
        return out.text
    }

    // MARK: Handlers

    private final class Counter: PushCounterHandler {
        private let state = Locked<Int64>(0)
        var value: Int64 { state.withLock { $0 } }
        func increment(by amount: Int64) { state.withLock { $0 &+= max(0, amount) } }
        func reset() { state.withLock { $0 = 0 } }
    }

    private final class Meter: PushMeterHandler {
        private let state = Locked<Double>(0)
        var value: Double { state.withLock { $0 } }
        func set(_ value: Double) { state.withLock { $0 = value } }
        func increment(by amount: Double) { state.withLock { $0 += amount } }
        func decrement(by amount: Double) { state.withLock { $0 -= amount } }
    }

    private final class Timer: PushTimerHandler {
        struct State {
            var buckets = [Int](repeating: 0, count: PushPrometheusMetrics.durationBuckets.count)
            var sum: Double = 0
            var count = 0
        }
        private let state = Locked(State())
        var snapshot: State { state.withLock { $0 } }
        func recordNanoseconds(_ duration: Int64) {
            let seconds = Double(max(0, duration)) / 1e9
            state.withLock { state in
                state.sum += seconds
                state.count += 1
                for (index, bound) in PushPrometheusMetrics.durationBuckets.enumerated() where seconds <= bound { state.buckets[index] += 1 }
            }
        }
    }
}
