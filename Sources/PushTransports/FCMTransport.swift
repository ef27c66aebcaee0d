package import PushHTTP
import PushEnvelope
import PushProviders

/// Direct FCM HTTP v1 with the operator's service account: data-only messages carrying the
/// contract's payload in plaintext (the private direct path), to phones and watches. What is
/// sent and the 401 invalidation are `FCMClient`'s (the relay's too); the window, backoff,
/// retries and log are `DeliveryPipeline`'s; this is the hub's policy: which deliveries go, and
/// the report read as a `PushResult`.
package struct FCMTransport: PushTransport {
    package var name: PushTransportName { .fcm }
    package let fcm: FCMClient
    let pipeline: DeliveryPipeline

    package var endpoint: String { fcm.endpoint }
    package var projectId: String { fcm.projectId }
    package var accessTokens: FCMAccessTokenProvider { fcm.accessTokens }

    package init(
        endpoint: String = "https://fcm.googleapis.com", account: FCMServiceAccount, client: HTTPClient,
        accessTokens: FCMAccessTokenProvider? = nil, retryPolicy: PushRetryPolicy = .none, logger: any PushLogger = SilentPushLogger(),
        concurrency: Int = 64, metrics: (any PushMetricsFactory)? = nil
    ) {
        self.fcm = FCMClient(
            endpoint: endpoint, projectId: account.projectId, accessTokens: accessTokens ?? FCMAccessTokenProvider(account: account, client: client))
        self.pipeline = DeliveryPipeline(.fcm, client: client, policy: retryPolicy, logger: logger, concurrency: concurrency, metrics: metrics)
    }

    package func send(count: Int, window: Int, draft: @escaping @Sendable (Int) -> PushDraft) async -> [PushResult] {
        guard count > 0 else { return [] }
        // One exchange for the batch: if Google refuses the service account, every device of
        // the batch fails with that one reason, and the exchange is not repeated per device.
        let accessToken: String
        do {
            accessToken = try await fcm.accessToken()
        } catch {
            return pipeline.refuseAll(count: count, draft: draft, PushResult(outcome: .failed, reason: .oauth, detail: error.message, status: error.status, attempts: 0))
        }
        let fcm = self.fcm
        return await pipeline.send(
            count: count, window: window, chunk: Self.chunk, draft: draft,
            prepare: { delivery -> PipelinePrepared<FCMClient.Message> in
                guard case .plaintext(let payload) = delivery.content else { return .refused(.refused(.fcmRequiresPlaintext)) }
                guard delivery.target != .ios else { return .refused(.refused(.fcmRequiresAndroidToken)) }
                let message = FCMClient.Message(
                    token: delivery.token, data: .payload(payload), highPriority: delivery.priority == .high, directBootOK: delivery.target == .wear)
                return .send(fcm.firstRequest(message, accessToken: accessToken), message)
            }, parse: FCMClient.parse,
            finish: { _, message, sent in
                let report = fcm.report(message, accessToken: accessToken, sent: sent)
                guard fcm.refusesAccessToken(report) else { return .done(Self.result(report)) }
                return .more { _ in Self.result(await fcm.invalidating(report, accessToken: accessToken)) }
            })
    }

    /// Requests started together (`DeliveryPipeline`'s chunked send).
    static let chunk = 16

    static func result(_ report: FCMClient.Report) -> PushResult { PushResult(report.answer, latency: report.latency, attempts: report.attempts) }
}
