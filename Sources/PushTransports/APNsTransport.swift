package import PushHTTP
import PushEnvelope
import PushProviders

/// Direct APNs over HTTP/2 with an ES256 provider token: `POST /3/device/<token>` to
/// `api.push.apple.com` (or the sandbox, or an override). All pushes share the client's one
/// long-lived multiplexed connection to the endpoint and one provider token. What is sent and
/// the fresh-token resend are `APNsClient`'s (the relay's too); the window, backoff, retries and
/// log are `DeliveryPipeline`'s; this is the hub's policy: which deliveries go, and the report
/// read as a `PushResult`.
package struct APNsTransport: PushTransport {
    package var name: PushTransportName { .apns }
    package let apns: APNsClient
    let pipeline: DeliveryPipeline

    package var endpoint: String { apns.endpoint }
    package var bundleId: String { apns.topic }
    package var providerToken: APNsProviderToken { apns.providerToken }

    package init(
        endpoint: String, credentials: APNsCredentials, client: HTTPClient, providerToken: APNsProviderToken? = nil,
        retryPolicy: PushRetryPolicy = .none, logger: any PushLogger = SilentPushLogger(), concurrency: Int = 256, metrics: (any PushMetricsFactory)? = nil
    ) {
        self.apns = APNsClient(
            endpoint: endpoint, topic: credentials.bundleId, providerToken: providerToken ?? APNsProviderToken(credentials: credentials))
        self.pipeline = DeliveryPipeline(.apns, client: client, policy: retryPolicy, logger: logger, concurrency: concurrency, metrics: metrics)
    }

    package func send(count: Int, window: Int, draft: @escaping @Sendable (Int) -> PushDraft) async -> [PushResult] {
        guard count > 0 else { return [] }
        // One token for the whole batch; minting failures fail the batch once.
        let token: String
        do {
            token = try await apns.token()
        } catch {
            return pipeline.refuseAll(count: count, draft: draft, .refused(.providerToken, detail: error.message))
        }
        let apns = self.apns
        return await pipeline.send(
            count: count, window: window, chunk: Self.chunk, draft: draft,
            prepare: { delivery -> PipelinePrepared<APNsClient.Push> in
                guard case .envelope(let envelope) = delivery.content else { return .refused(.refused(.apnsRequiresEnvelope)) }
                guard delivery.target == .ios else { return .refused(.refused(.apnsRequiresIOSToken)) }
                let push = APNsClient.Push(token: delivery.token, envelope: envelope, priority: delivery.priority.rawValue, collapseId: delivery.collapseId)
                guard let request = apns.firstRequest(push, jwt: token) else { return .refused(Self.result(.malformedToken)) }
                return .send(request, push)
            }, parse: APNsClient.parse,
            finish: { _, push, sent in
                let report = apns.report(push, jwt: token, sent: sent)
                guard report.askedForFreshToken else { return .done(Self.result(report)) }
                return .more { batch in Self.result(await apns.resend(push, after: report, rejected: token, over: batch)) }
            })
    }

    /// Requests started together (`DeliveryPipeline`'s chunked send).
    static let chunk = 16

    /// The hub's reading of a report: the answer by `HubAnswerPolicy`; a fresh token that could
    /// not be minted keeps Apple's refusal and says why in the detail.
    static func result(_ report: APNsClient.Report) -> PushResult {
        var result = PushResult(report.answer, latency: report.latency, attempts: report.attempts)
        if report.askedForFreshToken, let failure = report.tokenFailure { result.detail = "refresh failed: \(failure.message)" }
        return result
    }
}
