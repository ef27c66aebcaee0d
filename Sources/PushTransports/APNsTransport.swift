package import PushHTTP
import PushEnvelope

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

    func send(_ delivery: PushDelivery, token: String) async -> PushResult {
        await send([delivery], token: token).first ?? .refused(.noResult)
    }

    func send(_ deliveries: [PushDelivery], token: String) async -> [PushResult] {
        var results = await call.perform(deliveries, secrets: [token], prepare: { prepare($0, jwt: token) }, classify: Self.verdict)
        let expired = results.indices.filter { results[$0].reason == .apnsExpiredProviderToken }
        guard !expired.isEmpty else { return results }
        // Apple says our token is too old: mint once (single flight across the batch) and
        // retry those pushes once.
        do {
            let fresh = try await providerToken.refresh(rejected: token)
            let again = await call.perform(
                expired.map { deliveries[$0] }, secrets: [fresh], prepare: { prepare($0, jwt: fresh) }, classify: Self.verdict)
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
        guard !delivery.token.isEmpty, delivery.token.utf8.allSatisfy({ Self.isHex($0) }) else {
            return .refuse(.refused(.badDeviceTokenFormat))
        }
        return .send(request(delivery, envelope: envelope, jwt: jwt))
    }

    func request(_ delivery: PushDelivery, envelope: String, jwt: String) -> HTTPRequest {
        let headers: HTTPHeaders = [
            "authorization": "bearer " + jwt,
            "apns-topic": bundleId,
            "apns-push-type": "alert",
            "apns-priority": delivery.priority == .high ? "10" : "5",
            "apns-expiration": "0",
            "apns-collapse-id": Self.collapseId(delivery.collapseId),
            "content-type": "application/json",
        ]
        return HTTPRequest(method: .post, url: endpoint + "/3/device/" + HTTPBaseURL.pathSegment(delivery.token), headers: headers, body: Self.body(envelope: envelope))
    }

    /// The exact body: a generic alert the Notification Service Extension replaces after
    /// decrypting `hapi.e`.
    static func body(envelope: String) -> [UInt8] {
        let prefix: StaticString = #"{"aps":{"mutable-content":1,"alert":{"title":"HAPI","body":"New activity"},"sound":"default"},"hapi":{"v":1,"e":"#
        var out: [UInt8] = []
        out.reserveCapacity(prefix.utf8CodeUnitCount + envelope.utf8.count + 4)
        out.append(contentsOf: UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
        CanonicalJSON.writeString(envelope, into: &out)
        out.append(UInt8(ascii: "}"))
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// At most 64 UTF-8 bytes, cut only between characters.
    package static func collapseId(_ value: String) -> String {
        guard value.utf8.count > 64 else { return value }
        var result = ""
        var bytes = 0
        for character in value {
            let size = character.utf8.count
            if bytes + size > 64 { break }
            result.append(character)
            bytes += size
        }
        return result
    }

    static func verdict(_ response: HTTPResponse) -> ProviderCall.Verdict {
        let object = ProviderCall.jsonObject(response.body)
        var verdict = ProviderCall.Verdict(classification: classify(status: response.status, body: response.body))
        if (200...299).contains(response.status) { verdict.apnsId = response.headers.first(name: "apns-id") }
        if verdict.classification.outcome == .invalid, case .integer(let timestamp)? = object?["timestamp"] {
            verdict.invalidSince = timestamp
        }
        return verdict
    }

    /// 2xx → sent. 410 `Unregistered` (or `ExpiredToken`) and 400 `BadDeviceToken` → invalid;
    /// a 410 without one of those reasons is not proof of a dead token. Everything else → failed with Apple's reason; 429 `TooManyRequests`, 500 and
    /// 503 may be retried by a policy, `TooManyProviderTokenUpdates` never (we keep the token
    /// and back off; minting again would make it worse).
    package static func classify(status: Int, body: [UInt8]) -> Classification {
        let code = ProviderCall.jsonObject(body)?["reason"]?.stringValue.map(ProviderCall.code)
        let reason = code.map(PushDeliveryReason.init(rawValue:))
        switch (status, code) {
        case (200...299, _):
            return Classification(outcome: .sent, reason: nil)
        case (410, "Unregistered"), (410, "ExpiredToken"):
            return Classification(outcome: .invalid, reason: reason)
        case (400, "BadDeviceToken"):
            return Classification(outcome: .invalid, reason: .apnsBadDeviceToken)
        case (429, "TooManyProviderTokenUpdates"):
            return Classification(outcome: .failed, reason: .apnsTooManyProviderTokenUpdates)
        case (429, _), (500...599, _):
            return Classification(outcome: .failed, reason: reason ?? .http(status), retryable: true)
        default:
            return Classification(outcome: .failed, reason: reason ?? .http(status))
        }
    }

    static func isHex(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46)
    }
}
