import PushEnvelope
import PushLoopbackServer
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
        let transport = WebPushTransport(client: standIn.client, vapid: vapid, logger: logger, metrics: metrics)
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
}
