package import PushHTTP
package import PushProviders
import PushEnvelope

/// Web Push to browsers' push services (RFC 8030/8291/8292) over the shared HTTP client: HTTP/2
/// where the service offers it, HTTP/1.1 otherwise, redirects never followed. Every request
/// carries `addressPolicy` (`EndpointAddressPolicy.publicOnly` unless private endpoints are
/// allowed), so an endpoint resolving to a refused address fails `endpoint_not_allowed` before
/// a byte is sent, and no request rides a connection the hub's trusted origins opened.
package struct WebPushTransport: Sendable {
    /// One subscription to send to: the browser's endpoint and keys as it gave them.
    package struct Target: Sendable, Equatable, LoggableDelivery {
        package var endpoint: String
        package var p256dh: String
        package var auth: String
        /// The previous VAPID public key remembered to reach this browser (tried first).
        package var previousVAPIDPublicKey: String?
        package init(endpoint: String, p256dh: String, auth: String, previousVAPIDPublicKey: String? = nil) {
            self.endpoint = endpoint
            self.p256dh = p256dh
            self.auth = auth
            self.previousVAPIDPublicKey = previousVAPIDPublicKey
        }

        var logPlatform: String { WebPushTransport.platform }
        /// The endpoint's fingerprint: the endpoint is a capability, never logged.
        var tokenHash: String { TokenFingerprint.of(endpoint) }
    }

    /// `PushLogRecord.platform` of a Web Push delivery.
    package static let platform = "web"

    package var name: PushTransportName { .webpush }
    let vapid: WebPushVAPID
    /// The pairs a key rotation replaced, newest first (settings.json `previousVapidKeys`).
    let previousVAPIDs: [WebPushVAPID]
    let recipients = WebPushRecipientCache()
    /// Where an endpoint may point: `.publicOnly` unless private endpoints are allowed.
    let addressPolicy: EndpointAddressPolicy
    /// The send loop every channel shares. No endpoint backoff (its windows are zero): one dead
    /// push service must not hold back the others, which share no endpoint with it.
    let pipeline: DeliveryPipeline
    /// The client it sends on (the hub's one client, shared with the native channels).
    package var client: HTTPClient { pipeline.call.client }
    /// Messages in flight at once for one notification (`concurrency.webPush`).
    package var concurrency: Int { pipeline.concurrency }

    package init(
        client: HTTPClient, vapid: WebPushVAPID, previousVAPIDs: [WebPushVAPID] = [], addressPolicy: EndpointAddressPolicy = .publicOnly,
        retryPolicy: PushRetryPolicy = .none, logger: any PushLogger = SilentPushLogger(), concurrency: Int = 64,
        metrics: (any PushMetricsFactory)? = nil
    ) {
        self.addressPolicy = addressPolicy
        self.vapid = vapid
        self.previousVAPIDs = previousVAPIDs
        self.pipeline = DeliveryPipeline(
            .webpush, client: client, policy: retryPolicy, backoff: EndpointBackoff(initialWindow: .zero, maximumWindow: .zero), logger: logger,
            concurrency: concurrency, metrics: metrics)
    }

    /// The public key browsers subscribe with now.
    package var vapidPublicKey: String { vapid.publicKey }

    /// The identities to try for one target, each once: the remembered previous key first (it
    /// worked last time), then the current one, then the other kept ones.
    func identities(for target: Target) -> [WebPushVAPID] {
        let all = [vapid] + previousVAPIDs
        guard let remembered = target.previousVAPIDPublicKey, let first = all.first(where: { $0.publicKey == remembered }) else { return all }
        return [first] + all.filter { $0.publicKey != remembered }
    }

    /// Messages sealed and handed to the client together (`DeliveryPipeline`'s chunked send):
    /// one wake-up of the client's event loop and one resume per chunk instead of per message.
    static let chunk = 16

    /// A target with its endpoint parsed once (nil: not an https URL we send to).
    struct Addressed: LoggableDelivery {
        let target: Target
        let parts: PushWebEndpoint.Parts?
        var logPlatform: String { target.logPlatform }
        var tokenHash: String { target.tokenHash }
    }

    /// What one sealed message keeps for reading its answer and sending it again.
    struct Sealed: Sendable {
        let parts: PushWebEndpoint.Parts
        let origin: String
        let body: [UInt8]
        let identities: [WebPushVAPID]
        let authorization: String
    }

    /// Seals `payload` for every target and sends all through the pipeline (at most
    /// `concurrency` in flight, each logged as it ends); one result per target, in order. Never
    /// throws. A push refused with 401 or 403 is sent once more with each other identity
    /// (`identities(for:)`); the result's `vapidPublicKey` says which one its answer was for.
    /// Each goes with `headers` (RFC 8030 `Topic`/`Urgency`, or none).
    package func send(_ payload: [UInt8], to targets: [Target], headers: WebPushProvider.MessageHeaders = .none) async -> [PushResult] {
        guard !targets.isEmpty else { return [] }
        // Each endpoint parsed once; one VAPID header per origin and first identity, minted (or
        // taken from the cache) before sending.
        let endpoints = targets.map { PushWebEndpoint.parse($0.endpoint) }
        var authorizations: [String: Result<String, PushCredentialError>] = [:]
        for (target, parts) in zip(targets, endpoints) {
            guard let origin = parts?.origin, let first = identities(for: target).first else { continue }
            let key = first.publicKey + " " + origin
            guard authorizations[key] == nil else { continue }
            do {
                authorizations[key] = .success(try await first.authorization(origin: origin))
            } catch {
                authorizations[key] = .failure(error)
            }
        }
        let frozen = authorizations
        return await pipeline.send(
            count: targets.count, window: .max, chunk: Self.chunk, draft: { .deliver(Addressed(target: targets[$0], parts: endpoints[$0])) },
            prepare: { self.seal(payload, for: $0.target, parts: $0.parts, headers: headers, authorizations: frozen) },
            parse: Self.parse,
            finish: { delivery, sealed, exchanged in self.finish(delivery.target, sealed, exchanged, headers: headers) })
    }

    /// Seals one message (only when the window has room for it) and makes its request.
    private func seal(
        _ payload: [UInt8], for target: Target, parts: PushWebEndpoint.Parts?, headers: WebPushProvider.MessageHeaders,
        authorizations: [String: Result<String, PushCredentialError>]
    ) -> PipelinePrepared<Sealed> {
        guard let parts else { return .refused(.refused(.invalidRequest, detail: "the subscription's endpoint is not an https URL")) }
        let origin = parts.origin
        let identities = identities(for: target)
        let authorization: String
        switch authorizations[(identities.first?.publicKey ?? "") + " " + origin] {
        case .success(let value)?: authorization = value
        case .failure(let error)?: return .refused(.refused(.providerToken, detail: error.message))
        case nil: return .refused(.refused(.providerToken))
        }
        guard let recipient = recipients.recipient(p256dh: target.p256dh, auth: target.auth) else { return .refused(.refused(.sealFailed)) }
        let sealed = WebPushProvider.seal(payload: payload, for: recipient)
        guard let body = sealed.body else { return .refused(.refused(sealed.refusal ?? .sealFailed)) }
        let message = Sealed(parts: parts, origin: origin, body: body, identities: identities, authorization: authorization)
        return .send(request(message, authorization: authorization, headers: headers), message)
    }

    private func request(_ sealed: Sealed, authorization: String, headers: WebPushProvider.MessageHeaders) -> HTTPRequest {
        var request = HTTPRequest(
            WebPushProvider.request(pathAndQuery: sealed.parts.pathAndQuery, sealedBody: sealed.body, authorization: authorization, headers: headers),
            endpoint: sealed.origin)
        request.addressPolicy = addressPolicy
        return request
    }

    /// The first answer read; after a 401 or 403, the same sealed body once more with each
    /// other identity, until one is not refused.
    private func finish(_ target: Target, _ sealed: Sealed, _ exchanged: ProviderExchangeResult, headers: WebPushProvider.MessageHeaders)
        -> PipelineFinish
    {
        @Sendable func result(_ exchanged: ProviderExchangeResult, _ authorization: String, _ identity: WebPushVAPID?) -> PushResult {
            // Nothing a service echoes may carry the capability URL, the keys or our JWT.
            let secrets = [target.endpoint, sealed.parts.pathAndQuery, target.p256dh, target.auth, authorization]
            var result = PushResult(exchanged, secrets: secrets)
            result.vapidPublicKey = identity?.publicKey
            return result
        }
        let first = result(exchanged, sealed.authorization, sealed.identities.first)
        guard Self.refusesIdentity(first), sealed.identities.count > 1 else { return .done(first) }
        return .more { exchange in
            var attempts = first.attempts
            for identity in sealed.identities.dropFirst() {
                guard let other = try? await identity.authorization(origin: sealed.origin) else { continue }
                let answered = await exchange.exchange(self.request(sealed, authorization: other, headers: headers), parse: Self.parse)
                var again = result(answered, other, identity)
                attempts += again.attempts
                guard Self.refusesIdentity(again) else {
                    again.attempts = attempts
                    return again
                }
            }
            var last = first
            last.attempts = attempts
            return last
        }
    }

    @Sendable static func parse(_ response: HTTPResponse) -> ProviderAnswer {
        WebPushProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
    }

    /// 401 and 403: the push service does not take this VAPID identity for the subscription
    /// (Mozilla: the `k` is not the subscribing key; Google: the key does not match).
    static func refusesIdentity(_ result: PushResult) -> Bool {
        result.outcome == .failed && (result.status == 401 || result.status == 403)
    }
}
