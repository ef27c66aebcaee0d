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
    package struct Target: Sendable, Equatable {
        package var endpoint: String
        package var p256dh: String
        package var auth: String
        package init(endpoint: String, p256dh: String, auth: String) {
            self.endpoint = endpoint
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    package var name: PushTransportName { .webpush }
    let client: HTTPClient
    let vapid: WebPushVAPID
    let policy: PushRetryPolicy
    let concurrency: Int
    let recipients = WebPushRecipientCache()

    package init(client: HTTPClient, vapid: WebPushVAPID, retryPolicy: PushRetryPolicy = .none, concurrency: Int = 64) {
        self.client = client
        self.vapid = vapid
        self.policy = retryPolicy
        self.concurrency = concurrency
    }

    /// Seals `payload` for every target and sends all at once (at most `concurrency` in flight),
    /// each with `headers` (RFC 8030 `Topic`/`Urgency`, or none); one result per target, in
    /// order. Never throws.
    package func send(_ payload: [UInt8], to targets: [Target], headers: WebPushProvider.MessageHeaders = .none) async -> [PushResult] {
        guard !targets.isEmpty else { return [] }
        // One VAPID header per origin, minted (or taken from the cache) before sending.
        var authorizations: [String: Result<String, PushCredentialError>] = [:]
        for target in targets {
            guard let origin = PushWebEndpoint.origin(of: target.endpoint), authorizations[origin] == nil else { continue }
            do {
                authorizations[origin] = .success(try await vapid.authorization(origin: origin))
            } catch {
                authorizations[origin] = .failure(error)
            }
        }
        let frozen = authorizations
        // No shared backoff: one dead push service must not hold back the others.
        let call = ProviderCall(client: client, policy: policy, backoff: EndpointBackoff(initialWindow: .zero, maximumWindow: .zero))
        let batchStart = ContinuousClock.now
        return await PushTransports.window(targets.count, limit: concurrency) { index in
            await Self.send(
                payload, to: targets[index], headers: headers, authorizations: frozen, recipients: recipients, call: call, batchStart: batchStart)
        }
    }

    /// Seals (only when the window has room for it) and sends one.
    private static func send(
        _ payload: [UInt8], to target: Target, headers: WebPushProvider.MessageHeaders, authorizations: [String: Result<String, PushCredentialError>], recipients: WebPushRecipientCache,
        call: ProviderCall, batchStart: ContinuousClock.Instant
    ) async -> PushResult {
        guard let parts = PushWebEndpoint.parse(target.endpoint), let origin = PushWebEndpoint.origin(of: target.endpoint) else {
            return .refused(.invalidRequest, detail: "the subscription's endpoint is not an https URL")
        }
        let authorization: String
        switch authorizations[origin] {
        case .success(let value)?: authorization = value
        case .failure(let error)?: return .refused(.providerToken, detail: error.message)
        case nil: return .refused(.providerToken)
        }
        guard let recipient = recipients.recipient(p256dh: target.p256dh, auth: target.auth) else { return .refused(.sealFailed) }
        let sealed = WebPushProvider.seal(payload: payload, for: recipient)
        guard let body = sealed.body else { return .refused(sealed.refusal ?? .sealFailed) }
        let request = WebPushProvider.request(pathAndQuery: parts.pathAndQuery, sealedBody: body, authorization: authorization, headers: headers)
        // Nothing a service echoes may carry the capability URL, the keys or our JWT.
        let secrets = [target.endpoint, parts.pathAndQuery, target.p256dh, target.auth, authorization]
        return await call.perform(HTTPRequest(request, endpoint: origin), batchStartedAt: batchStart, secrets: secrets) { response in
            WebPushProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
        }.result
    }
}
