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
        return await pipeline.send(count: count, window: window, draft: draft) { [self] delivery, exchange in
            await send(delivery, accessToken: accessToken, over: exchange)
        }
    }

    /// One delivery: the hub's checks (plaintext content, an Android or Wear token; watches get
    /// `direct_boot_ok`), then the client, which drops the access token after a 401 so the next
    /// batch exchanges a new one.
    func send(_ delivery: PushDelivery, accessToken: String, over batch: ProviderCall.Batch) async -> PushResult {
        guard case .plaintext(let payload) = delivery.content else { return .refused(.fcmRequiresPlaintext) }
        guard delivery.target != .ios else { return .refused(.fcmRequiresAndroidToken) }
        let message = FCMClient.Message(
            token: delivery.token, data: .payload(payload), highPriority: delivery.priority == .high, directBootOK: delivery.target == .wear)
        let report = await fcm.send(message, accessToken: accessToken, over: batch)
        return PushResult(report.answer, latency: report.latency, attempts: report.attempts)
    }
}
