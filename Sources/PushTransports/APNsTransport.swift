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

    package func send(_ deliveries: [PushDelivery]) async -> [PushResult] {
        // One token for the whole batch; minting failures fail the batch once.
        let token: String
        do {
            token = try await providerToken.token()
        } catch {
            return deliveries.map { delivery in
                let result = PushResult.refused(.providerToken, detail: error.message)
                logger.log(delivery, transport: name, result)
                return result
            }
        }
        return await inChunks(deliveries, concurrency: concurrency) { [self] chunk in
            let results = await send(chunk, token: token)
            for (delivery, result) in zip(chunk, results) { logger.log(delivery, transport: name, result) }
            return results
        }
    }

    func send(_ deliveries: [PushDelivery], token: String) async -> [PushResult] {
        var results = await call.perform(deliveries, secrets: [token], prepare: { prepare($0, jwt: token) }, parse: Self.parse)
        let expired = results.indices.filter { results[$0].reason == .apnsExpiredProviderToken }
        guard !expired.isEmpty else { return results }
        // Apple says our token is too old: mint once (single flight across the batch) and
        // retry those pushes once.
        do {
            let fresh = try await providerToken.refresh(rejected: token)
            let again = await call.perform(expired.map { deliveries[$0] }, secrets: [fresh], prepare: { prepare($0, jwt: fresh) }, parse: Self.parse)
            for (index, retried) in zip(expired, again) {
                let first = results[index]
                results[index] = retried
                results[index].latency += first.latency
                results[index].attempts += first.attempts
            }
        } catch {
            for index in expired { results[index].detail = "refresh failed: \(error.message)" }
        }
        return results
    }

    func prepare(_ delivery: PushDelivery, jwt: String) -> ProviderCall.Prepared {
        guard case .envelope(let envelope) = delivery.content else { return .refuse(.refused(.apnsRequiresEnvelope)) }
        guard delivery.target == .ios else { return .refuse(.refused(.apnsRequiresIOSToken)) }
        // Hex only: anything else would change the request path.
        guard APNsProvider.isWellFormedToken(delivery.token) else { return .refuse(.refused(.badDeviceTokenFormat)) }
        return .send(request(delivery, envelope: envelope, jwt: jwt))
    }

    func request(_ delivery: PushDelivery, envelope: String, jwt: String) -> HTTPRequest {
        HTTPRequest(
            APNsProvider.request(
                token: delivery.token, envelope: envelope, topic: bundleId, jwt: jwt, priority: delivery.priority.rawValue,
                collapseId: APNsProvider.collapseId(delivery.collapseId)), endpoint: endpoint)
    }

    @Sendable static func parse(_ response: HTTPResponse) -> ProviderAnswer {
        APNsProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
    }
}
