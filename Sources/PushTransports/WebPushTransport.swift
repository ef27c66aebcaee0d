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

    package init(client: HTTPClient, vapid: WebPushVAPID, retryPolicy: PushRetryPolicy = .none, concurrency: Int = 64) {
        self.client = client
        self.vapid = vapid
        self.policy = retryPolicy
        self.concurrency = concurrency
    }

    /// Seals `payload` for every target and sends all at once (at most `concurrency` in flight);
    /// one result per target, in order. Never throws.
    package func send(_ payload: [UInt8], to targets: [Target]) async -> [PushResult] {
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
        let size = max(1, concurrency / 4)
        let chunks = stride(from: 0, to: targets.count, by: size).map { Array(targets[$0..<min($0 + size, targets.count)]) }
        let call = ProviderCall(client: client, policy: policy, backoff: EndpointBackoff(initialWindow: .zero, maximumWindow: .zero))
        return await boundedConcurrentMap(chunks, limit: 4) { chunk in
            await Self.send(payload, to: chunk, authorizations: frozen, call: call)
        }.flatMap { $0 }
    }

    private static func send(
        _ payload: [UInt8], to targets: [Target], authorizations: [String: Result<String, PushCredentialError>], call: ProviderCall
    ) async -> [PushResult] {
        var results = [PushResult?](repeating: nil, count: targets.count)
        var requests: [HTTPRequest] = []
        var positions: [Int] = []
        for (index, target) in targets.enumerated() {
            guard let parts = PushWebEndpoint.parse(target.endpoint), let origin = PushWebEndpoint.origin(of: target.endpoint) else {
                results[index] = .refused(.invalidRequest, detail: "the subscription's endpoint is not an https URL")
                continue
            }
            let authorization: String
            switch authorizations[origin] {
            case .success(let value)?: authorization = value
            case .failure(let error)?: results[index] = .refused(.providerToken, detail: error.message); continue
            case nil: results[index] = .refused(.providerToken); continue
            }
            let sealed = WebPushProvider.seal(payload: payload, p256dh: target.p256dh, auth: target.auth)
            guard let body = sealed.body else {
                results[index] = .refused(sealed.refusal ?? .sealFailed)
                continue
            }
            let request = WebPushProvider.request(pathAndQuery: parts.pathAndQuery, sealedBody: body, authorization: authorization)
            requests.append(HTTPRequest(request, endpoint: origin))
            positions.append(index)
        }
        let answers = await call.perform(requests, parse: { response in
            WebPushProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
        })
        for (position, result) in zip(positions, answers) {
            var result = result
            // Nothing a service echoes may carry the capability URL or our token.
            let secrets = [targets[position].endpoint, targets[position].p256dh, targets[position].auth]
            if let detail = result.detail { result.detail = SafeText.sanitize(detail, limit: Int.max, redactingTokens: true, secrets: secrets) }
            if let reason = result.reason {
                let scrubbed = SafeText.sanitize(reason.rawValue, limit: Int.max, redactingTokens: true, secrets: secrets)
                if scrubbed != reason.rawValue { result.reason = PushDeliveryReason(rawValue: scrubbed) }
            }
            results[position] = result
        }
        return results.map { $0 ?? PushResult(outcome: .failed, reason: .noResult) }
    }
}
