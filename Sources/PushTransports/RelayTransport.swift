package import PushHTTP
import PushEnvelope

/// The official (or a self-hosted) push relay: `POST {relayUrl}/v1/push` with the encrypted
/// envelope. Serves iOS and Android phones; the relay holds the provider credentials and sees
/// only ciphertext.
public struct RelayTransport: PushTransport {
    public var name: String { "relay" }
    /// The relay base URL without trailing slashes.
    public let baseURL: String
    let call: ProviderCall
    let logger: any PushLogger
    let concurrency: Int

    /// - Parameters:
    ///   - baseURL: e.g. `https://push.hapi.run`; trailing slashes are ignored.
    ///   - client: the shared HTTP client.
    ///   - retryPolicy: retries of 429/5xx; none by default.
    ///   - concurrency: sends in flight at once for one batch.
    package init(
        baseURL: String, client: HTTPClient, retryPolicy: RetryPolicy = .none, logger: any PushLogger = SilentPushLogger(),
        concurrency: Int = 64
    ) {
        self.baseURL = baseURL.droppingTrailingSlashes
        self.call = ProviderCall(client: client, policy: retryPolicy, backoff: EndpointBackoff())
        self.logger = logger
        self.concurrency = concurrency
    }

    public func send(_ deliveries: [PushDelivery]) async -> [PushResult] {
        await boundedConcurrentMap(deliveries, limit: concurrency) { delivery in
            let result = await send(delivery)
            logger.log(delivery, transport: name, result)
            return result
        }
    }

    func send(_ delivery: PushDelivery) async -> PushResult {
        guard case .envelope(let envelope) = delivery.content else {
            return .refused("relay_requires_envelope")
        }
        // The relay refuses larger envelopes with 413; refusing here saves the round trip.
        guard envelope.utf8.count <= PushEnvelope.maximumEnvelopeLength else { return .refused("too_large") }
        guard let body = Self.body(for: delivery, envelope: envelope) else { return .refused("wear_relay_unsupported") }
        let request = HTTPRequest(
            method: .post, url: baseURL + "/v1/push", headers: ["content-type": "application/json"], body: body)
        return await call.perform(request) { response in
            ProviderCall.Verdict(classification: Self.classify(status: response.status, body: response.body))
        }
    }

    /// The exact request body. iOS carries the collapse id; Android does not.
    static func body(for delivery: PushDelivery, envelope: String) -> [UInt8]? {
        var object: [String: JSONValue] = [
            "token": .string(delivery.token), "envelope": .string(envelope), "priority": .integer(Int64(delivery.priority.rawValue)),
        ]
        switch delivery.target {
        case .ios:
            object["platform"] = "ios"
            object["collapseId"] = .string(APNsTransport.collapseId(delivery.collapseId))
        case .androidPhone:
            object["platform"] = "android"
        case .wear:
            return nil
        }
        return RelayTransport.orderedJSON(object, order: ["platform", "token", "envelope", "collapseId", "priority"])
    }

    /// Writes the members in the contract's documented order (readable captures; JSON itself
    /// does not care).
    static func orderedJSON(_ object: [String: JSONValue], order: [String]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        for key in order {
            guard let value = object[key] else { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out += JSONValue.string(key).canonicalBytes + [UInt8(ascii: ":")] + value.canonicalBytes
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// 2xx → sent; 410 with code `unregistered` → invalid; everything else → failed, keeping
    /// the relay's `code` and message. A 410 without that code (a proxy's "Gone", say) is not
    /// proof of a dead token: failed. 429 and 5xx (but 501) may be retried by a policy.
    public static func classify(status: Int, body: [UInt8]) -> Classification {
        let object = ProviderCall.jsonObject(body)
        let code = object?["code"]?.stringValue
        let message = object?["message"]?.stringValue ?? object?["error"]?.stringValue
        var reason = code ?? "http_\(status)"
        if let message, !message.isEmpty { reason += ": " + ProviderCall.excerpt(message) }
        switch status {
        case 200...299:
            return Classification(outcome: .sent, reason: nil)
        case 410 where code == "unregistered":
            return Classification(outcome: .invalid, reason: "unregistered")
        case 429, 500...599:
            return Classification(outcome: .failed, reason: reason, retryable: status != 501)
        default:
            return Classification(outcome: .failed, reason: reason)
        }
    }
}
