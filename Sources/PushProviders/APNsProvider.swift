import PushEnvelope

/// Direct APNs: the request (`POST /3/device/<token>` with the provider token and the alert
/// headers) and the reading of Apple's answers. The hub's `APNsTransport` and the relay's
/// forwarder both send what `request` builds and decide on what `parse` reads.
package enum APNsProvider: ProviderAnswerParser {
    /// One push. `priority` is 10 (now) or 5 (power-friendly); `collapseId` is sent when given,
    /// cut by `APNsCollapseId.cut` (the hub always gives one; the relay only when the hub sent one).
    package static func request(token: String, envelope: String, topic: String, jwt: String, priority: Int, collapseId: String?) -> ProviderRequest {
        var headers: [ProviderRequest.Header] = [
            .init("authorization", "bearer " + jwt),
            .init("apns-topic", topic),
            .init("apns-push-type", "alert"),
            .init("apns-priority", String(priority)),
            .init("apns-expiration", "0"),
        ]
        if let collapseId { headers.append(.init("apns-collapse-id", APNsCollapseId.cut(collapseId))) }
        headers.append(.init("content-type", "application/json"))
        return ProviderRequest(path: "/3/device/" + ProviderText.pathSegment(token), headers: headers, body: body(envelope: envelope))
    }

    /// The exact body: a generic alert the Notification Service Extension replaces after
    /// decrypting `hapi.e`.
    package static func body(envelope: String) -> [UInt8] {
        let prefix: StaticString = #"{"aps":{"mutable-content":1,"alert":{"title":"HAPI","body":"New activity"},"sound":"default"},"hapi":{"v":1,"e":"#
        var out: [UInt8] = []
        out.reserveCapacity(prefix.utf8CodeUnitCount + envelope.utf8.count + 4)
        out.append(contentsOf: UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
        CanonicalJSON.writeString(envelope, into: &out)
        out.append(UInt8(ascii: "}"))
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// 2xx → accepted. 410 `Unregistered` or `ExpiredToken` and 400 `BadDeviceToken` → the
    /// token is dead (a 410 without one of those reasons is no proof). 403 `ExpiredProviderToken`
    /// → our JWT is stale (the client mints a fresh one and sends once more); only at 403, the status Apple answers it with:
    /// elsewhere the reason proves nothing about our token (a proxy or a 5xx page repeating it),
    /// and minting on it would spend the mints Apple throttles (`TooManyProviderTokenUpdates`),
    /// so it is read as any other refusal. 429 → throttled, `TooManyProviderTokenUpdates` said
    /// apart (minting or sending again would make it worse); 5xx → unavailable; everything else
    /// refused with Apple's reason.
    package static func parse(status: Int, body: [UInt8], header: (String) -> String?) -> ProviderAnswer {
        let object = ProviderText.jsonObject(body)
        let code = object?["reason"]?.stringValue
        if (200...299).contains(status) { return ProviderAnswer(.accepted, status: status, apnsId: header("apns-id")) }
        var answer = ProviderAnswer(
            (500...599).contains(status) ? .unavailable : .refused, status: status,
            reason: code.map { PushDeliveryReason(rawValue: ProviderText.code($0)) } ?? .http(status), code: code,
            retryAfter: ProviderText.retryAfter(header("retry-after")))
        let since: Int64? = if case .integer(let timestamp)? = object?["timestamp"] { timestamp } else { nil }
        switch (status, code) {
        case (410, "Unregistered"):
            answer.said = .tokenDead(since: since)
            answer.evidence = .init(kind: .unregistered, reason: .apnsUnregistered)
        case (410, "ExpiredToken"):
            answer.said = .tokenDead(since: since)
            answer.evidence = .init(kind: .expired, reason: .apnsExpiredToken)
        case (400, "BadDeviceToken"):
            answer.said = .tokenDead(since: since)
            answer.reason = .apnsBadDeviceToken
            answer.evidence = .init(kind: .malformed, reason: .apnsBadDeviceToken)
        case (403, "ExpiredProviderToken"):
            answer.said = .providerTokenExpired
        case (429, "TooManyProviderTokenUpdates"):
            answer.said = .providerTokenUpdatesThrottled
            answer.reason = .apnsTooManyProviderTokenUpdates
        case (429, _):
            answer.said = .throttled
        default:
            break
        }
        return answer
    }
}
