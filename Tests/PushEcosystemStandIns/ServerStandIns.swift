import Foundation

// Small stand-ins for the server side a hub is written in, shaped like the real APIs so the
// README's embedding code compiles against them unchanged in spirit: swift-log's `Logger`,
// swift-metrics' `MetricsFactory` and handlers, swift-service-lifecycle's `Service` and
// `gracefulShutdown()`, and a Hummingbird-like `Router`. Each records what it was given, so
// the embedding test can check the bridges carry everything across.

private final class StandInBox<Value>: @unchecked Sendable {
    // @unchecked: every access holds `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func with<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

// MARK: swift-log

public struct Logger: Sendable {
    public enum Level: String, Sendable, Comparable {
        case trace, debug, info, notice, warning, error, critical
        private var rank: Int { [.trace, .debug, .info, .notice, .warning, .error, .critical].firstIndex(of: self) ?? 0 }
        public static func < (a: Level, b: Level) -> Bool { a.rank < b.rank }
    }

    public enum MetadataValue: Sendable, Equatable {
        case string(String)
    }

    public typealias Metadata = [String: MetadataValue]

    public struct Message: Sendable, Equatable, ExpressibleByStringLiteral {
        public let text: String
        public init(stringLiteral value: String) { text = value }
    }

    public struct Entry: Sendable, Equatable {
        public let level: Level
        public let message: String
        public let metadata: Metadata
    }

    public let label: String
    private let entries = StandInBox<[Entry]>([])

    public init(label: String) { self.label = label }

    public func log(level: Level, _ message: Message, metadata: Metadata? = nil) {
        entries.with { $0.append(Entry(level: level, message: message.text, metadata: metadata ?? [:])) }
    }

    /// What was logged (stand-in only: the real Logger hands entries to its backend).
    public var logged: [Entry] { entries.with { $0 } }
}

// MARK: swift-metrics

public protocol CounterHandler: AnyObject, Sendable {
    func increment(by: Int64)
    func reset()
}

public protocol TimerHandler: AnyObject, Sendable {
    func recordNanoseconds(_ duration: Int64)
}

public protocol MeterHandler: AnyObject, Sendable {
    func set(_ value: Int64)
    func set(_ value: Double)
    func increment(by: Double)
    func decrement(by: Double)
}

public protocol MetricsFactory: Sendable {
    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler
}

/// A factory that keeps every value by `label{dimensions}` (as a test backend would).
public final class RecordingMetricsFactory: MetricsFactory {
    private let values = StandInBox<[String: Double]>([:])

    public init() {}

    public func value(_ label: String, _ dimensions: [(String, String)] = []) -> Double? {
        values.with { $0[Self.key(label, dimensions)] }
    }

    public var keys: [String] { values.with { $0.keys.sorted() } }

    static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        label + "{" + dimensions.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
    }

    fileprivate func update(_ key: String, _ change: (inout Double) -> Void) {
        values.with { change(&$0[key, default: 0]) }
    }

    private final class Handler: CounterHandler, TimerHandler, MeterHandler {
        let factory: RecordingMetricsFactory
        let key: String
        init(_ factory: RecordingMetricsFactory, _ key: String) {
            self.factory = factory
            self.key = key
        }
        func increment(by amount: Int64) { factory.update(key) { $0 += Double(amount) } }
        func reset() { factory.update(key) { $0 = 0 } }
        func recordNanoseconds(_ duration: Int64) { factory.update(key) { $0 += 1 } }  // a count of recordings
        func set(_ value: Int64) { factory.update(key) { $0 = Double(value) } }
        func set(_ value: Double) { factory.update(key) { $0 = value } }
        func increment(by amount: Double) { factory.update(key) { $0 += amount } }
        func decrement(by amount: Double) { factory.update(key) { $0 -= amount } }
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        Handler(self, Self.key(label, dimensions))
    }
    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        Handler(self, Self.key(label, dimensions))
    }
    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        Handler(self, Self.key(label, dimensions))
    }
}

// MARK: swift-service-lifecycle

public protocol Service: Sendable {
    func run() async throws
}

/// Returns when the application shuts down gracefully (here: when its task is cancelled).
public func gracefulShutdown() async throws {
    while !Task.isCancelled { try await Task.sleep(for: .milliseconds(10)) }
}

// MARK: A Hummingbird-like router

public struct Request: Sendable {
    public let path: String
    public let body: [UInt8]
    /// The hub's authenticated namespace (a real hub takes it from the session's token).
    public let namespace: String
    public init(path: String, body: [UInt8], namespace: String) {
        self.path = path
        self.body = body
        self.namespace = namespace
    }
}

public struct Response: Sendable, Equatable {
    public let status: Int
    public let body: String
    public init(status: Int, body: String) {
        self.status = status
        self.body = body
    }
}

public final class Router: Sendable {
    public typealias Handler = @Sendable (Request) async throws -> Response
    private let routes = StandInBox<[String: Handler]>([:])

    public init() {}

    public func post(_ path: String, use handler: @escaping Handler) { routes.with { $0["POST " + path] = handler } }
    public func delete(_ path: String, use handler: @escaping Handler) { routes.with { $0["DELETE " + path] = handler } }

    /// What the server would do with a request (stand-in only).
    public func respond(method: String, _ request: Request) async throws -> Response {
        guard let handler = routes.with({ $0[method + " " + request.path] }) else { return Response(status: 404, body: "") }
        return try await handler(request)
    }
}
