package import PushHTTP
package import PushProviders
import PushEnvelope

/// Web Push to browsers' push services (RFC 8030/8291/8292) over the shared HTTP client: HTTP/2
/// where the service offers it, HTTP/1.1 otherwise, redirects never followed. The client given
/// here carries the address policy (`EndpointAddressPolicy.publicOnly` unless private endpoints
/// are allowed), so an endpoint resolving to a refused address fails `endpoint_not_allowed`
/// before a byte is sent.
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
    /// The send loop every channel shares. No endpoint backoff (its windows are zero): one dead
    /// push service must not hold back the others, which share no endpoint with it.
    let pipeline: DeliveryPipeline
    /// Messages in flight at once for one notification (`concurrency.webPush`).
    package var concurrency: Int { pipeline.concurrency }

    package init(
        client: HTTPClient, vapid: WebPushVAPID, previousVAPIDs: [WebPushVAPID] = [], retryPolicy: PushRetryPolicy = .none,
        logger: any PushLogger = SilentPushLogger(), concurrency: Int = 64, metrics: (any PushMetricsFactory)? = nil
    ) {
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

    /// Seals `payload` for every target and sends all through the pipeline (at most
    /// `concurrency` in flight, each logged as it ends); one result per target, in order. Never
    /// throws. A push refused with 401 or 403 is sent once more with each other identity
    /// (`identities(for:)`); the result's `vapidPublicKey` says which one its answer was for.
    /// Each goes with `headers` (RFC 8030 `Topic`/`Urgency`, or none).
    package func send(_ payload: [UInt8], to targets: [Target], headers: WebPushProvider.MessageHeaders = .none) async -> [PushResult] {
        guard !targets.isEmpty else { return [] }
        // One VAPID header per origin and first identity, minted (or taken from the cache) before sending.
        var authorizations: [String: Result<String, PushCredentialError>] = [:]
        for target in targets {
            guard let origin = PushWebEndpoint.origin(of: target.endpoint), let first = identities(for: target).first else { continue }
            let key = first.publicKey + " " + origin
            guard authorizations[key] == nil else { continue }
            do {
                authorizations[key] = .success(try await first.authorization(origin: origin))
            } catch {
                authorizations[key] = .failure(error)
            }
        }
        let frozen = authorizations
        return await pipeline.send(count: targets.count, window: .max, draft: { .deliver(targets[$0]) }) { target, exchange in
            await self.send(payload, to: target, headers: headers, authorizations: frozen, over: exchange)
        }
    }

    /// Seals (only when the window has room for it) and sends one; after a 401 or 403, the same
    /// sealed body once more with each other identity, until one is not refused.
    private func send(
        _ payload: [UInt8], to target: Target, headers: WebPushProvider.MessageHeaders, authorizations: [String: Result<String, PushCredentialError>],
        over exchange: ProviderCall.Batch
    ) async -> PushResult {
        guard let parts = PushWebEndpoint.parse(target.endpoint), let origin = PushWebEndpoint.origin(of: target.endpoint) else {
            return .refused(.invalidRequest, detail: "the subscription's endpoint is not an https URL")
        }
        let identities = identities(for: target)
        let authorization: String
        switch authorizations[(identities.first?.publicKey ?? "") + " " + origin] {
        case .success(let value)?: authorization = value
        case .failure(let error)?: return .refused(.providerToken, detail: error.message)
        case nil: return .refused(.providerToken)
        }
        guard let recipient = recipients.recipient(p256dh: target.p256dh, auth: target.auth) else { return .refused(.sealFailed) }
        let sealed = WebPushProvider.seal(payload: payload, for: recipient)
        guard let body = sealed.body else { return .refused(sealed.refusal ?? .sealFailed) }
        func attempt(_ authorization: String, _ identity: WebPushVAPID?) async -> PushResult {
            let request = WebPushProvider.request(pathAndQuery: parts.pathAndQuery, sealedBody: body, authorization: authorization, headers: headers)
            // Nothing a service echoes may carry the capability URL, the keys or our JWT.
            let secrets = [target.endpoint, parts.pathAndQuery, target.p256dh, target.auth, authorization]
            let exchanged = await exchange.exchange(HTTPRequest(request, endpoint: origin)) { response in
                WebPushProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
            }
            var result = PushResult(exchanged, secrets: secrets)
            result.vapidPublicKey = identity?.publicKey
            return result
        }
        let first = await attempt(authorization, identities.first)
        var attempts = first.attempts
        for identity in identities.dropFirst() where Self.refusesIdentity(first) {
            guard let other = try? await identity.authorization(origin: origin) else { continue }
            var again = await attempt(other, identity)
            attempts += again.attempts
            guard Self.refusesIdentity(again) else {
                again.attempts = attempts
                return again
            }
        }
        var result = first
        result.attempts = attempts
        return result
    }

    /// 401 and 403: the push service does not take this VAPID identity for the subscription
    /// (Mozilla: the `k` is not the subscribing key; Google: the key does not match).
    static func refusesIdentity(_ result: PushResult) -> Bool {
        result.outcome == .failed && (result.status == 401 || result.status == 403)
    }
}
