import PushEnvelope
import PushLoopbackServer
import PushSync
import PushTestSupport
import Testing

@testable import PushHTTP
@testable import PushTransports

/// Issue 27, item 2: one send loop. Web Push goes through the pipeline the native channels use,
/// so its deliveries are logged and gauged where theirs are, and the pipeline's rules (a
/// drafting refusal answered as is and not logged, a channel's refusal logged) hold for every
/// channel alike.
@Suite struct DeliveryPipelineTests {
    /// Each subscription's delivery is logged by the transport as it ends, a refusal before any
    /// request included, as the endpoint's fingerprint (never the endpoint, a capability), and
    /// its requests pass the in-flight gauge.
    @Test func webPushDeliveriesAreLoggedAndGaugedByThePipeline() async throws {
        let standIn = try StandIn { request in .init(status: request.path.hasSuffix("-gone") ? 410 : 201) }
        let browser = try #require(WebPushTestBrowser())
        let vapid = WebPushVAPID(keyPair: try WebPushP256Key.generate(), subject: "mailto:ops@example.com")
        let logger = CapturingLogger()
        let metrics = PushPrometheusMetrics()
        let transport = WebPushTransport(client: standIn.client, vapid: vapid, addressPolicy: .any, logger: logger, metrics: metrics)
        let targets = [
            WebPushTransport.Target(endpoint: standIn.server.baseURL + "/wpush/capability-ok", p256dh: browser.p256dh, auth: browser.auth),
            WebPushTransport.Target(endpoint: standIn.server.baseURL + "/wpush/capability-gone", p256dh: browser.p256dh, auth: browser.auth),
            WebPushTransport.Target(endpoint: "http://example.invalid/wpush/capability-plain", p256dh: browser.p256dh, auth: browser.auth),
        ]
        let results = await transport.send(Array(#"{"title":"t"}"#.utf8), to: targets)
        await standIn.shutdown()

        #expect(results.map(\.outcome) == [.sent, .invalid, .failed])
        #expect(results[2].attempts == 0 && results[2].reason == .invalidRequest)
        let records = logger.all
        #expect(records.count == 3)
        #expect(records.allSatisfy { $0.platform == WebPushTransport.platform && $0.transport == .webpush })
        let byHash = Dictionary(records.map { ($0.tokenHash, $0) }, uniquingKeysWith: { first, _ in first })
        for (target, result) in zip(targets, results) {
            let record = try #require(byHash[TokenFingerprint.of(target.endpoint)])
            #expect(record.outcome == result.outcome && record.status == result.status && record.reason == result.reason)
        }
        for record in records { #expect(!record.description.contains("capability"), "\(record)") }
        #expect(standIn.server.requests.count == 2)
        let text = metrics.render()
        #expect(text.contains(#"hapi_push_requests_in_flight{transport="webpush"} 0"#), "\(text)")
    }

    /// The same rules on a native channel: a delivery refused while drafting (no envelope could
    /// be sealed) is answered as is, neither sent nor logged; one the channel's prepare refuses is
    /// logged without a request; the rest are sent and logged.
    @Test func aDraftingRefusalIsNotLoggedAChannelRefusalIs() async throws {
        let standIn = try StandIn()
        let logger = CapturingLogger()
        let transport = RelayTransport(baseURL: standIn.server.baseURL, client: standIn.client, logger: logger)
        let plaintext = PushDelivery(target: .androidPhone, token: "tok", content: .plaintext(samplePayload), collapseId: "ready-s1")
        let drafts: [PushDraft] = [
            .refused(.refused(.sealFailed)), .deliver(plaintext), .deliver(envelopeDelivery()),
        ]
        let results = await transport.send(count: drafts.count, window: 2) { drafts[$0] }
        await standIn.shutdown()

        #expect(results.map(\.reason) == [.sealFailed, .relayRequiresEnvelope, nil])
        #expect(results.map(\.outcome) == [.failed, .failed, .sent])
        #expect(standIn.server.requests.count == 1)
        let records = logger.all
        #expect(records.count == 2)
        #expect(Set(records.map(\.tokenHash)) == [plaintext.tokenHash, envelopeDelivery().tokenHash])
    }
    /// Issue 28, item 2: Web Push seals and starts its messages a chunk at a time (one hand-off
    /// to the client per chunk), yet reads each answer as it arrives: a push service that never
    /// answers four subscriptions, one in each of the first four chunks, holds only their slots,
    /// and every other subscription is answered and logged long before those four time out.
    @Test func aSilentSubscriptionHoldsOnlyItsOwnSlotInAChunk() async throws {
        let silent: Set<String> = Set([0, 17, 40, 63].map { "/wpush/s\($0)" })
        let standIn = try StandIn(timeout: .seconds(4)) { request in silent.contains(request.path) ? .action(.neverRespond) : .init(status: 201) }
        let browser = try #require(WebPushTestBrowser())
        let vapid = WebPushVAPID(keyPair: try WebPushP256Key.generate(), subject: "mailto:ops@example.com")
        let logged = TimedLogger()
        // One worker: its 16 slots are the whole window, so a slot held by its chunk would stall everything.
        let transport = WebPushTransport(client: standIn.client, vapid: vapid, addressPolicy: .any, logger: logged, concurrency: WebPushTransport.chunk)
        let targets = (0..<200).map {
            WebPushTransport.Target(endpoint: standIn.server.baseURL + "/wpush/s\($0)", p256dh: browser.p256dh, auth: browser.auth)
        }
        let start = ContinuousClock.now
        let results = await transport.send(Array(#"{"title":"t"}"#.utf8), to: targets)
        await standIn.shutdown()

        let silentIndices: Set<Int> = [0, 17, 40, 63]
        for (index, result) in results.enumerated() {
            if silentIndices.contains(index) {
                #expect(result.outcome == .failed && result.reason == .timeout, "\(index): \(result)")
            } else {
                #expect(result.outcome == .sent, "\(index): \(result)")
            }
        }
        let answered = logged.all.filter { $0.0.outcome == .sent }.map { start.duration(to: $0.1) }
        #expect(answered.count == 196)
        #expect(answered.allSatisfy { $0 < .seconds(2) }, "the last answered delivery was logged after \(answered.max() ?? .zero)")
    }
}

/// Log records with the moment each was logged.
final class TimedLogger: PushLogger {
    private let records = Locked<[(PushLogRecord, ContinuousClock.Instant)]>([])
    func log(_ record: PushLogRecord) { records.withLock { $0.append((record, .now)) } }
    var all: [(PushLogRecord, ContinuousClock.Instant)] { records.withLock { $0 } }
}
