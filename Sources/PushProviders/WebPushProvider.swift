import PushEnvelope

/// Web Push (RFC 8030) as a provider: the request the `web-push` package sends by default
/// (web-push.md §5) and the reading of a push service's answers.
package enum WebPushProvider: ProviderAnswerParser {
    /// Four weeks, the `web-push` package's default and the JavaScript hub's only value.
    package static let timeToLive = 2_419_200

    /// `POST <endpoint>` with the sealed body; `authorization` from `WebPushVAPID`.
    package static func request(pathAndQuery: String, sealedBody: [UInt8], authorization: String) -> ProviderRequest {
        ProviderRequest(
            path: pathAndQuery,
            headers: [
                .init("ttl", String(timeToLive)), .init("content-encoding", "aes128gcm"), .init("content-type", "application/octet-stream"),
                .init("authorization", authorization),
            ], body: sealedBody)
    }

    /// Seals `payload` for a subscription (fresh key and salt), or why it cannot be.
    package static func seal(payload: [UInt8], p256dh: String, auth: String) -> (body: [UInt8]?, refusal: PushDeliveryReason?) {
        guard let key = Base64.urlDecode(p256dh), let secret = Base64.urlDecode(auth) else { return (nil, .sealFailed) }
        do throws(WebPushCryptoError) {
            return (try WebPushCipher.seal(plaintext: payload, subscriptionKey: key, authSecret: secret), nil)
        } catch {
            return (nil, error == .tooLarge ? .tooLarge : .sealFailed)
        }
    }

    /// 2xx accepted; 404 and 410 the subscription is gone (RFC 8030 §7: expired or unknown);
    /// 413 too large; 429 throttled (`Retry-After`); anything else refused with the service's
    /// reason sanitized (Apple's `{"reason"}`, Mozilla's `{"errno","message"}`, FCM's text),
    /// 5xx but 501 retryable.
    package static func parse(status: Int, body: [UInt8], header: (String) -> String?) -> ProviderAnswer {
        if (200...299).contains(status) { return ProviderAnswer(.accepted, status: status) }
        if status == 404 || status == 410 {
            return ProviderAnswer(
                .tokenDead(since: nil), status: status, reason: .subscriptionGone, evidence: .init(kind: .unregistered, reason: .subscriptionGone))
        }
        if status == 413 { return ProviderAnswer(.refused, status: status, reason: .tooLarge) }
        let object = ProviderText.jsonObject(body)
        let code = object?["reason"]?.stringValue ?? object?["error"]?.stringValue
        var message = object?["message"]?.stringValue
        if object == nil, !body.isEmpty, body.count <= 4096 { message = String(decoding: body, as: UTF8.self) }
        return ProviderAnswer(
            status == 429 ? .throttled : .refused, status: status,
            reason: code.flatMap { $0.isEmpty ? nil : PushDeliveryReason(rawValue: ProviderText.code($0)) } ?? .http(status),
            detail: message.flatMap { $0.isEmpty ? nil : ProviderText.excerpt($0) }, code: code,
            retryable: status == 429 || ((500...599).contains(status) && status != 501), retryAfter: ProviderText.retryAfter(header("retry-after")))
    }
}
