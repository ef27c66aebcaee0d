package import PushHTTP
import PushEnvelope
import PushProviders

/// Direct FCM HTTP v1 with the operator's service account: data-only messages carrying the
/// contract's payload in plaintext (the private direct path), to phones and watches.
package struct FCMTransport: PushTransport {
    package var name: PushTransportName { .fcm }
    package let endpoint: String
    package let projectId: String
    package let accessTokens: FCMAccessTokenProvider
    let call: ProviderCall
    let logger: any PushLogger
    let concurrency: Int

    package init(
        endpoint: String = "https://fcm.googleapis.com", account: FCMServiceAccount, client: HTTPClient,
        accessTokens: FCMAccessTokenProvider? = nil, retryPolicy: PushRetryPolicy = .none, logger: any PushLogger = SilentPushLogger(),
        concurrency: Int = 64, metrics: (any PushMetricsFactory)? = nil
    ) {
        self.endpoint = endpoint.droppingTrailingSlashes
        self.projectId = account.projectId
        self.accessTokens = accessTokens ?? FCMAccessTokenProvider(account: account, client: client)
        self.call = ProviderCall(
            client: client, policy: retryPolicy, backoff: EndpointBackoff(), inFlight: ProviderCall.inFlightMeter(metrics, transport: .fcm))
        self.logger = logger
        self.concurrency = concurrency
    }

    package func send(count: Int, window: Int, draft: @escaping @Sendable (Int) -> PushDraft) async -> [PushResult] {
        guard count > 0 else { return [] }
        // One exchange for the batch: if Google refuses the service account, every device of
        // the batch fails with that one reason, and the exchange is not repeated per device.
        let accessToken: String
        do {
            accessToken = try await accessTokens.token()
        } catch {
            return PushDraft.refuseAll(count, draft: draft, logger: logger, transport: name, PushResult(outcome: .failed, reason: .oauth, detail: error.message, status: error.status, attempts: 0))
        }
        let (backingOff, batchStart) = call.batchStart()
        return await PushTransports.window(count, limit: min(concurrency, window)) { [self] index in
            switch draft(index) {
            case .refused(let result): return result
            case .deliver(let delivery):
                let result: PushResult
                switch Self.prepare(delivery, endpoint: endpoint, projectId: projectId, accessToken: accessToken) {
                case .refuse(let refused): result = refused
                case .send where backingOff: result = .refused(.endpointBackoff)
                case .send(let request):
                    result = await call.perform(request, batchStartedAt: batchStart, secrets: [delivery.token, accessToken], parse: Self.parse).result
                    // Google no longer takes this token: the next batch exchanges a new one.
                    if result.status == 401 { await accessTokens.invalidate(accessToken) }
                }
                logger.log(delivery, transport: name, result)
                return result
            }
        }
    }

    static func prepare(_ delivery: PushDelivery, endpoint: String, projectId: String, accessToken: String) -> ProviderCall.Prepared {
        guard case .plaintext(let payload) = delivery.content else { return .refuse(.refused(.fcmRequiresPlaintext)) }
        guard delivery.target != .ios else { return .refuse(.refused(.fcmRequiresAndroidToken)) }
        let request = FCMProvider.request(
            token: delivery.token, data: .payload(payload), highPriority: delivery.priority == .high, directBootOK: delivery.target == .wear,
            projectId: projectId, accessToken: accessToken)
        return .send(HTTPRequest(request, endpoint: endpoint))
    }

    @Sendable static func parse(_ response: HTTPResponse) -> ProviderAnswer {
        FCMProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
    }
}
