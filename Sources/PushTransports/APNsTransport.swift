package import PushHTTP
import PushEnvelope
import PushProviders

/// Direct APNs over HTTP/2 with an ES256 provider token: `POST /3/device/<token>` to
/// `api.push.apple.com` (or the sandbox, or an override). All pushes share the client's one
/// long-lived multiplexed connection to the endpoint and one provider token.
package struct APNsTransport: PushTransport {
    package var name: PushTransportName { .apns }
    package let endpoint: String
    package let bundleId: String
    package let providerToken: APNsProviderToken
    let call: ProviderCall
    let logger: any PushLogger
    let concurrency: Int

    package init(
        endpoint: String, credentials: APNsCredentials, client: HTTPClient, providerToken: APNsProviderToken? = nil,
        retryPolicy: PushRetryPolicy = .none, logger: any PushLogger = SilentPushLogger(), concurrency: Int = 256, metrics: (any PushMetricsFactory)? = nil
    ) {
        self.endpoint = endpoint.droppingTrailingSlashes
        self.bundleId = credentials.bundleId
        self.providerToken = providerToken ?? APNsProviderToken(credentials: credentials)
        self.call = ProviderCall(
            client: client, policy: retryPolicy, backoff: EndpointBackoff(), inFlight: ProviderCall.inFlightMeter(metrics, transport: .apns))
        self.logger = logger
        self.concurrency = concurrency
    }

    package func send(count: Int, window: Int, draft: @escaping @Sendable (Int) -> PushDraft) async -> [PushResult] {
        guard count > 0 else { return [] }
        // One token for the whole batch; minting failures fail the batch once.
        let token: String
        do {
            token = try await providerToken.token()
        } catch {
            return PushDraft.refuseAll(count, draft: draft, logger: logger, transport: name, .refused(.providerToken, detail: error.message))
        }
        let (backingOff, batchStart) = call.batchStart()
        return await PushTransports.window(count, limit: min(concurrency, window)) { [self] index in
            switch draft(index) {
            case .refused(let result): return result
            case .deliver(let delivery):
                let result = await send(delivery, jwt: token, backingOff: backingOff, batchStart: batchStart)
                logger.log(delivery, transport: name, result)
                return result
            }
        }
    }

    /// One push: when Apple says our token is too old, mint once (single flight across every
    /// push that hears it) and send this push once more.
    func send(_ delivery: PushDelivery, jwt: String, backingOff: Bool, batchStart: ContinuousClock.Instant) async -> PushResult {
        let request: HTTPRequest
        switch prepare(delivery, jwt: jwt) {
        case .refuse(let result): return result
        case .send(let prepared): request = prepared
        }
        if backingOff { return .refused(.endpointBackoff) }
        let first = await call.perform(request, batchStartedAt: batchStart, secrets: [delivery.token, jwt], parse: Self.parse)
        guard first.answer.verdict == .retryWithFreshProviderToken else { return first.result }
        let fresh: String
        do {
            fresh = try await providerToken.refresh(rejected: jwt)
        } catch {
            var result = first.result
            result.detail = "refresh failed: \(error.message)"
            return result
        }
        guard case .send(let again) = prepare(delivery, jwt: fresh) else { return first.result }
        var result = await call.perform(again, batchStartedAt: batchStart, secrets: [delivery.token, fresh], parse: Self.parse).result
        result.latency += first.result.latency
        result.attempts += first.result.attempts
        return result
    }

    func prepare(_ delivery: PushDelivery, jwt: String) -> ProviderCall.Prepared {
        guard case .envelope(let envelope) = delivery.content else { return .refuse(.refused(.apnsRequiresEnvelope)) }
        guard delivery.target == .ios else { return .refuse(.refused(.apnsRequiresIOSToken)) }
        // The provider layer's token rule: anything else would change the request path.
        guard APNsDeviceToken.isWellFormed(delivery.token) else { return .refuse(.refused(.badDeviceTokenFormat)) }
        return .send(request(delivery, envelope: envelope, jwt: jwt))
    }

    func request(_ delivery: PushDelivery, envelope: String, jwt: String) -> HTTPRequest {
        HTTPRequest(
            APNsProvider.request(
                token: delivery.token, envelope: envelope, topic: bundleId, jwt: jwt, priority: delivery.priority.rawValue,
                collapseId: delivery.collapseId), endpoint: endpoint)
    }

    @Sendable static func parse(_ response: HTTPResponse) -> ProviderAnswer {
        APNsProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
    }
}
