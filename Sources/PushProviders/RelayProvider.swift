import PushEnvelope

/// The HAPI push relay as the hub's provider: `POST /v1/push` with the sealed envelope, and the
/// reading of the relay's answers (docs/wire.md, "The relay's answers").
package enum RelayProvider: ProviderAnswerParser {
    /// The platform the relay forwards to.
    package enum Platform: String, Sendable {
        case ios, android
    }

    /// The `code` of the relay's error answers, as the official relay spells them: the relay
    /// server answers with these and the hub's client reads them (`parse`).
    package enum ErrorCode: String, Sendable {
        case badRequest = "bad_request"
        case unregistered = "unregistered"
        case tooLarge = "too_large"
        case rateLimited = "rate_limited"
        case unsupportedPlatform = "unsupported_platform"
        case upstream = "upstream"
        case notFound = "not_found"
        case methodNotAllowed = "method_not_allowed"
    }

    package static let path = "/v1/push"
    /// The largest envelope (base64 characters) the relay accepts; over it the relay answers
    /// 413 `too_large` and the hub does not send. The relay contract's name for the envelope's
    /// own cap, so the hub's relay client and the relay server read one number.
    package static let maximumEnvelopeBytes = PushEnvelopeCipher.maximumEnvelopeLength
    package static let headers: [ProviderRequest.Header] = [.init("content-type", "application/json")]

    /// One push. iOS carries the collapse id (cut to APNs' 64 bytes); Android does not.
    package static func request(platform: Platform, token: String, envelope: String, collapseId: String, priority: Int) -> ProviderRequest {
        ProviderRequest(path: path, headers: headers, body: body(platform: platform, token: token, envelope: envelope, collapseId: collapseId, priority: priority))
    }

    /// The exact request body, members in the contract's documented order (readable captures;
    /// JSON itself does not care), written as bytes.
    package static func body(platform: Platform, token: String, envelope: String, collapseId: String, priority: Int) -> [UInt8] {
        let prefix: StaticString
        switch platform {
        case .ios: prefix = #"{"platform":"ios","token":"#
        case .android: prefix = #"{"platform":"android","token":"#
        }
        var out: [UInt8] = []
        out.reserveCapacity(envelope.utf8.count + token.utf8.count + collapseId.utf8.count + 96)
        out.append(contentsOf: UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
        CanonicalJSON.writeString(token, into: &out)
        out.append(contentsOf: #","envelope":"#.utf8)
        CanonicalJSON.writeString(envelope, into: &out)
        if platform == .ios {
            out.append(contentsOf: #","collapseId":"#.utf8)
            CanonicalJSON.writeString(APNsCollapseId.cut(collapseId), into: &out)
        }
        out.append(contentsOf: #","priority":"#.utf8)
        out.append(contentsOf: String(priority).utf8)
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// 2xx → accepted; 410 with code `unregistered` → the token is dead (a 410 without it, a
    /// proxy's "Gone" say, is no proof); 429 → throttled; 5xx but 501 → unavailable;
    /// everything else refused, keeping the relay's `code` and message.
    package static func parse(status: Int, body: [UInt8], header: (String) -> String?) -> ProviderAnswer {
        if (200...299).contains(status) { return ProviderAnswer(.accepted, status: status) }
        let object = ProviderText.jsonObject(body)
        let code = object?["code"]?.stringValue
        let message = object?["message"]?.stringValue ?? object?["error"]?.stringValue
        if status == 410, code == ErrorCode.unregistered.rawValue {
            return ProviderAnswer(.tokenDead(since: nil), status: status, reason: .unregistered, code: code, evidence: .init(kind: .unregistered, reason: .unregistered))
        }
        return ProviderAnswer(
            status == 429 ? .throttled : (500...599).contains(status) && status != 501 ? .unavailable : .refused, status: status, reason: code.map { PushDeliveryReason(rawValue: ProviderText.code($0)) } ?? .http(status),
            detail: message.flatMap { $0.isEmpty ? nil : ProviderText.excerpt($0) }, code: code, retryAfter: ProviderText.retryAfter(header("retry-after")))
    }
}
