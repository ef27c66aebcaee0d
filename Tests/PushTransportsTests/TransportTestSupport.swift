import PushEnvelope
import PushLoopbackServer
import PushTestSupport
import PushSync
import Testing

@testable import PushHTTP
@testable import PushTransports

/// A recording stand-in server and a client that trusts its CA (verification stays on).
struct StandIn {
    let server: RecordingServer
    let client: HTTPClient

    init(
        timeout: Duration = .seconds(3), respond: @escaping RecordingServer.Responder = { _ in .json(#"{"ok":true}"#) }
    ) throws {
        server = try RecordingServer(respond: respond)
        // As the dispatcher configures it: one multiplexed connection per endpoint.
        client = try HTTPClient(
            configuration: .init(
                requestTimeout: timeout, additionalTrustedCAFile: server.caFile, maximumConnectionsPerHost: 1,
                maximumConcurrentStreamsPerConnection: 1000))
    }

    func shutdown() async {
        await client.shutdown()
        server.stop()
    }
}

/// Collects log records so tests can assert what a host would see.
final class CapturingLogger: PushLogger {
    private let records = Locked<[PushLogRecord]>([])
    func log(_ record: PushLogRecord) { records.withLock { $0.append(record) } }
    var all: [PushLogRecord] { records.withLock { $0 } }
}

/// A clock tests move by hand.
final class ManualClock: Sendable {
    private let time = Locked<Double>(1_800_000_000)
    var now: @Sendable () -> Double { { [self] in time.withLock { $0 } } }
    func advance(_ seconds: Double) { time.withLock { $0 += seconds } }
}

let sampleIOSToken = String(repeating: "a1", count: 32)
let samplePayload = PushNotificationPayload(
    type: .ready, sessionId: "s1", sessionName: "claude - hapi", url: "/sessions/s1", title: "Claude is ready", body: "Ready for input",
    severity: .info)

func envelopeDelivery(_ target: PushDelivery.Target = .ios, token: String = sampleIOSToken, envelope: String = "AAAA",
    priority: PushPriority = .high) -> PushDelivery
{
    PushDelivery(target: target, token: token, content: .envelope(envelope), collapseId: "ready-s1", priority: priority)
}

extension LoopbackServer.Request {
    /// Request headers without HTTP/2 pseudo-headers, lowercased, in order.
    var regularHeaders: [String: String] {
        var result: [String: String] = [:]
        for header in headers where !header.name.hasPrefix(":") { result[header.name.lowercased()] = header.value }
        return result
    }
}
