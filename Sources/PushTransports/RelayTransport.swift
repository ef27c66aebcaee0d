package import PushHTTP
import PushEnvelope
import PushProviders

/// The official (or a self-hosted) push relay: `POST {relayUrl}/v1/push` with the encrypted
/// envelope. Serves iOS and Android phones; the relay holds the provider credentials and sees
/// only ciphertext.
package struct RelayTransport: PushTransport {
    package var name: PushTransportName { .relay }
    /// The relay base URL without trailing slashes.
    package let baseURL: String
    let call: ProviderCall
    let logger: any PushLogger
    let concurrency: Int

    /// - Parameters:
    ///   - baseURL: e.g. `https://push.hapi.run`; trailing slashes are ignored.
    ///   - client: the shared HTTP client.
    ///   - retryPolicy: retries of 429/5xx; none by default.
    ///   - concurrency: sends in flight at once for one batch.
    package init(
        baseURL: String, client: HTTPClient, retryPolicy: PushRetryPolicy = .none, logger: any PushLogger = SilentPushLogger(),
        concurrency: Int = 64, metrics: (any PushMetricsFactory)? = nil
    ) {
        self.baseURL = baseURL.droppingTrailingSlashes
        self.call = ProviderCall(
            client: client, policy: retryPolicy, backoff: EndpointBackoff(), inFlight: ProviderCall.inFlightMeter(metrics, transport: .relay))
        self.logger = logger
        self.concurrency = concurrency
    }

    package func send(count: Int, window: Int, draft: @escaping @Sendable (Int) -> PushDraft) async -> [PushResult] {
        let (backingOff, batchStart) = call.batchStart()
        return await PushTransports.window(count, limit: min(concurrency, window)) { [self] index in
            switch draft(index) {
            case .refused(let result): return result
            case .deliver(let delivery):
                let result: PushResult
                switch Self.prepare(delivery, baseURL: baseURL) {
                case .refuse(let refused): result = refused
                case .send where backingOff: result = .refused(.endpointBackoff)
                case .send(let request): result = await call.perform(request, batchStartedAt: batchStart, secrets: [delivery.token], parse: Self.parse).result
                }
                logger.log(delivery, transport: name, result)
                return result
            }
        }
    }

    static func prepare(_ delivery: PushDelivery, baseURL: String) -> ProviderCall.Prepared {
        guard case .envelope(let envelope) = delivery.content else {
            return .refuse(.refused(.relayRequiresEnvelope))
        }
        // The relay refuses larger envelopes with 413; refusing here saves the round trip.
        guard envelope.utf8.count <= RelayProvider.maximumEnvelopeBytes else { return .refuse(.refused(.tooLarge)) }
        let platform: RelayProvider.Platform
        switch delivery.target {
        case .ios: platform = .ios
        case .androidPhone: platform = .android
        case .wear: return .refuse(.refused(.wearRelayUnsupported))
        }
        let request = RelayProvider.request(
            platform: platform, token: delivery.token, envelope: envelope, collapseId: delivery.collapseId, priority: delivery.priority.rawValue)
        return .send(HTTPRequest(request, endpoint: baseURL))
    }

    @Sendable static func parse(_ response: HTTPResponse) -> ProviderAnswer {
        RelayProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
    }
}
