package import PushHTTP
import PushEnvelope

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

    package func send(_ deliveries: [PushDelivery]) async -> [PushResult] {
        let url = baseURL + "/v1/push"
        let headers: HTTPHeaders = ["content-type": "application/json"]
        return await inChunks(deliveries, concurrency: concurrency) { [call, logger, name] chunk in
            let results = await call.perform(chunk, prepare: { Self.prepare($0, url: url, headers: headers) }) { response in
                ProviderCall.Verdict(classification: Self.classify(status: response.status, body: response.body))
            }
            for (delivery, result) in zip(chunk, results) { logger.log(delivery, transport: name, result) }
            return results
        }
    }

    func send(_ delivery: PushDelivery) async -> PushResult {
        await send([delivery]).first ?? .refused(.noResult)
    }

    static func prepare(_ delivery: PushDelivery, url: String, headers: HTTPHeaders) -> ProviderCall.Prepared {
        guard case .envelope(let envelope) = delivery.content else {
            return .refuse(.refused(.relayRequiresEnvelope))
        }
        // The relay refuses larger envelopes with 413; refusing here saves the round trip.
        guard envelope.utf8.count <= PushEnvelopeCipher.maximumEnvelopeLength else { return .refuse(.refused(.tooLarge)) }
        guard let body = body(for: delivery, envelope: envelope) else { return .refuse(.refused(.wearRelayUnsupported)) }
        return .send(HTTPRequest(method: .post, url: url, headers: headers, body: body))
    }

    /// The exact request body, members in the contract's documented order (readable captures;
    /// JSON itself does not care), written as bytes. iOS carries the collapse id; Android does not.
    static func body(for delivery: PushDelivery, envelope: String) -> [UInt8]? {
        let platform: StaticString
        switch delivery.target {
        case .ios: platform = #"{"platform":"ios","token":"#
        case .androidPhone: platform = #"{"platform":"android","token":"#
        case .wear: return nil
        }
        var out: [UInt8] = []
        out.reserveCapacity(envelope.utf8.count + delivery.token.utf8.count + delivery.collapseId.utf8.count + 96)
        out.append(contentsOf: UnsafeBufferPointer(start: platform.utf8Start, count: platform.utf8CodeUnitCount))
        CanonicalJSON.writeString(delivery.token, into: &out)
        out.append(contentsOf: #","envelope":"#.utf8)
        CanonicalJSON.writeString(envelope, into: &out)
        if delivery.target == .ios {
            out.append(contentsOf: #","collapseId":"#.utf8)
            CanonicalJSON.writeString(APNsTransport.collapseId(delivery.collapseId), into: &out)
        }
        out.append(contentsOf: #","priority":"#.utf8)
        out.append(contentsOf: String(delivery.priority.rawValue).utf8)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// 2xx → sent; 410 with code `unregistered` → invalid; everything else → failed, keeping
    /// the relay's `code` and message. A 410 without that code (a proxy's "Gone", say) is not
    /// proof of a dead token: failed. 429 and 5xx (but 501) may be retried by a policy.
    package static func classify(status: Int, body: [UInt8]) -> Classification {
        let object = ProviderCall.jsonObject(body)
        let code = object?["code"]?.stringValue
        let message = object?["message"]?.stringValue ?? object?["error"]?.stringValue
        let reason = code.map { PushDeliveryReason(rawValue: ProviderCall.code($0)) } ?? .http(status)
        let detail = message.flatMap { $0.isEmpty ? nil : ProviderCall.excerpt($0) }
        switch status {
        case 200...299:
            return Classification(outcome: .sent, reason: nil)
        case 410 where code == "unregistered":
            return Classification(outcome: .invalid, reason: .unregistered)
        case 429, 500...599:
            return Classification(outcome: .failed, reason: reason, detail: detail, retryable: status != 501)
        default:
            return Classification(outcome: .failed, reason: reason, detail: detail)
        }
    }
}
