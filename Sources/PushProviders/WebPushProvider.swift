package import PushEnvelope

/// Web Push (RFC 8030) as a provider: the request the `web-push` package sends by default
/// (web-push.md §5) and the reading of a push service's answers.
package enum WebPushProvider: ProviderAnswerParser {
    /// Four weeks, the `web-push` package's default and the JavaScript hub's only value.
    package static let timeToLive = 2_419_200

    /// RFC 8030's optional message headers, which the JavaScript hub never sends: `Topic`
    /// (§5.4: a push service holds only the newest message per topic for an offline browser, as
    /// `apns-collapse-id` does for iOS) and `Urgency` (§5.3).
    package struct MessageHeaders: Sendable, Equatable {
        package var topic: String?
        package var urgency: String?
        package init(topic: String? = nil, urgency: String? = nil) {
            self.topic = topic
            self.urgency = urgency
        }
        /// Neither header: the JavaScript hub's request.
        package static let none = MessageHeaders()
    }

    /// The longest `Topic` RFC 8030 §5.4 allows, in URL-safe base64 characters.
    package static let maximumTopicLength = 32

    /// A notification's `tag` as a `Topic`: the tag itself when it is at most 32 URL-safe base64
    /// characters, else the first 32 characters of the URL-safe base64 of its SHA-256 (the same
    /// tag always gives the same topic; `ready-<session id>` is 42 characters).
    package static func topic(forTag tag: String) -> String {
        let alphabet = tag.utf8.allSatisfy { byte in
            (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
        }
        if alphabet, !tag.isEmpty, tag.utf8.count <= maximumTopicLength { return tag }
        return String(Base64.urlEncodeUnpadded(Digest.sha256(Array(tag.utf8))).prefix(maximumTopicLength))
    }

    /// `Urgency: high` for what waits on the operator (a permission or input request), `normal`
    /// for the rest (ready, task notifications).
    package static func urgency(forType type: String) -> String {
        type == "permission-request" || type == "input-request" ? "high" : "normal"
    }

    /// Both headers for a notification of `type` with `tag` (no `Topic` without a tag).
    package static func messageHeaders(tag: String?, type: String) -> MessageHeaders {
        MessageHeaders(topic: tag.map(topic(forTag:)), urgency: urgency(forType: type))
    }

    /// `POST <endpoint>` with the sealed body; `authorization` from `WebPushVAPID`; `Topic` and
    /// `Urgency` when `headers` has them.
    package static func request(
        pathAndQuery: String, sealedBody: [UInt8], authorization: String, headers extra: MessageHeaders = .none
    ) -> ProviderRequest {
        var headers: [ProviderRequest.Header] = [
            .init("ttl", String(timeToLive)), .init("content-encoding", "aes128gcm"), .init("content-type", "application/octet-stream"),
            .init("authorization", authorization),
        ]
        if let topic = extra.topic { headers.append(.init("topic", topic)) }
        if let urgency = extra.urgency { headers.append(.init("urgency", urgency)) }
        return ProviderRequest(path: pathAndQuery, headers: headers, body: sealedBody)
    }

    /// Seals `payload` for a subscription (fresh key and salt), or why it cannot be.
    package static func seal(payload: [UInt8], p256dh: String, auth: String) -> (body: [UInt8]?, refusal: PushDeliveryReason?) {
        guard let recipient = try? WebPushRecipient(p256dh: p256dh, auth: auth) else { return (nil, .sealFailed) }
        return seal(payload: payload, for: recipient)
    }

    /// Seals `payload` for a subscription whose keys were parsed once (fresh key and salt).
    package static func seal(payload: [UInt8], for recipient: WebPushRecipient) -> (body: [UInt8]?, refusal: PushDeliveryReason?) {
        do throws(WebPushCryptoError) {
            return (try WebPushCipher.seal(plaintext: payload, for: recipient), nil)
        } catch {
            return (nil, error == .tooLarge ? .tooLarge : .sealFailed)
        }
    }

    /// 2xx accepted; 404 and 410 the subscription is gone (RFC 8030 §7: expired or unknown);
    /// 413 too large; 429 throttled (`Retry-After`); anything else refused with the service's
    /// reason sanitized (Apple's `{"reason"}`, Mozilla's `{"errno","message"}`, FCM's text),
    /// 5xx but 501 unavailable.
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
            status == 429 ? .throttled : (500...599).contains(status) && status != 501 ? .unavailable : .refused, status: status,
            reason: code.flatMap { $0.isEmpty ? nil : PushDeliveryReason(rawValue: ProviderText.code($0)) } ?? .http(status),
            detail: message.flatMap { $0.isEmpty ? nil : ProviderText.excerpt($0) }, code: code, retryAfter: ProviderText.retryAfter(header("retry-after")))
    }
}
