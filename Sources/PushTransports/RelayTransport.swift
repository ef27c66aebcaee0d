package import PushHTTP
import PushEnvelope
import PushProviders

/// The official (or a self-hosted) push relay: `POST {relayUrl}/v1/push` with the encrypted
/// envelope. Serves iOS and Android phones; the relay holds the provider credentials and sees
/// only ciphertext. Sent through `DeliveryPipeline`; what is the relay's is `prepare` and `parse`.
package struct RelayTransport: PushTransport {
    package var name: PushTransportName { .relay }
    /// The relay base URL without trailing slashes.
    package var baseURL: String { endpoint.text }
    /// The base URL parsed once: each push's request carries its origin.
    let endpoint: HTTPEndpoint
    let pipeline: DeliveryPipeline

    /// - Parameters:
    ///   - baseURL: e.g. `https://push.hapi.run`; trailing slashes are ignored.
    ///   - client: the shared HTTP client.
    ///   - retryPolicy: retries of 429/5xx; none by default.
    ///   - concurrency: sends in flight at once for one batch.
    package init(
        baseURL: String, client: HTTPClient, retryPolicy: PushRetryPolicy = .none, logger: any PushLogger = SilentPushLogger(),
        concurrency: Int = 64, metrics: (any PushMetricsFactory)? = nil
    ) {
        self.endpoint = HTTPEndpoint(baseURL)
        self.pipeline = DeliveryPipeline(.relay, client: client, policy: retryPolicy, logger: logger, concurrency: concurrency, metrics: metrics)
    }

    package func send(count: Int, window: Int, draft: @escaping @Sendable (Int) -> PushDraft) async -> [PushResult] {
        await pipeline.send(
            count: count, window: window, chunk: Self.chunk, draft: draft,
            prepare: { [endpoint] delivery -> PipelinePrepared<Void> in
                switch Self.prepare(delivery, endpoint: endpoint) {
                case .refuse(let refused): return .refused(refused)
                case .send(let request): return .send(request, ())
                }
            }, parse: Self.parse, finish: { delivery, _, exchanged in .done(PushResult(exchanged, secrets: [delivery.token])) })
    }

    /// What the relay makes of one delivery before anything is sent: its request, or a local
    /// refusal (wrong content, too large, a watch).
    /// Requests started together (`DeliveryPipeline`'s chunked send).
    static let chunk = 16

    enum Prepared {
        case send(HTTPRequest)
        case refuse(PushResult)
    }

    static func prepare(_ delivery: PushDelivery, endpoint: HTTPEndpoint) -> Prepared {
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
        return .send(HTTPRequest(request, endpoint: endpoint))
    }

    @Sendable static func parse(_ response: HTTPResponse) -> ProviderAnswer {
        RelayProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
    }
}
