package import PushEnvelope

/// FCM HTTP v1: the request (`POST /v1/projects/<project>/messages:send`, a data-only message
/// with the OAuth access token) and the reading of Google's answers. The hub sends its payload
/// as plaintext data (phones and watches); the relay sends the envelope (`hapi_v`, `hapi_e`)
/// restricted to the official app.
package enum FCMProvider: ProviderAnswerParser {
    /// What a message carries in `data`.
    package enum Data: Sendable {
        /// The contract's payload in plaintext, members in its insertion order (the hub's direct path).
        case payload(PushNotificationPayload)
        /// A sealed envelope, `{"hapi_v":"1","hapi_e":…}` (the relay).
        case envelope(String)
    }

    /// One message. `highPriority` picks `HIGH` or `NORMAL`; `directBootOK` (watches) lets a
    /// watch that rebooted still show it; `restrictedPackage` is the relay's app id.
    package static func request(
        token: String, data: Data, highPriority: Bool, directBootOK: Bool = false, restrictedPackage: String? = nil, projectId: String,
        accessToken: String
    ) -> ProviderRequest {
        let body: [UInt8]
        switch data {
        case .payload(let payload): body = Self.body(token: token, payload: payload, highPriority: highPriority, directBootOK: directBootOK)
        case .envelope(let envelope):
            body = Self.body(token: token, envelope: envelope, highPriority: highPriority, packageName: restrictedPackage ?? "")
        }
        return ProviderRequest(path: path(projectId: projectId), headers: headers(accessToken: accessToken), body: body)
    }

    /// The project id percent-encoded: it comes from the service-account file and must never
    /// change where the bearer token goes.
    package static func path(projectId: String) -> String { "/v1/projects/" + ProviderText.pathSegment(projectId) + "/messages:send" }

    package static func headers(accessToken: String) -> [ProviderRequest.Header] {
        [.init("authorization", "Bearer " + accessToken), .init("content-type", "application/json")]
    }

    /// A data-only message: every value a string, no `notification`, no `collapse_key`. Written
    /// in the JavaScript hub's byte order: `message` as `token`, `data`, `android`; `data` in the
    /// payload's insertion order (`PushNotificationPayload.jsonValue`).
    package static func body(token: String, payload: PushNotificationPayload, highPriority: Bool, directBootOK: Bool) -> [UInt8] {
        var android: [(key: String, value: JSONValue)] = [(key: "priority", value: .string(highPriority ? "HIGH" : "NORMAL"))]
        if directBootOK { android.append((key: "direct_boot_ok", value: true)) }
        let message: JSONValue = ["message": ["token": .string(token), "data": payload.jsonValue, "android": .object(android)]]
        return CanonicalJSON.javaScriptBytes(message)
    }

    /// The relay's message, members in the spec's order:
    /// `{"message":{"token":…,"data":{"hapi_v":"1","hapi_e":…},"android":{"priority":…,"restricted_package_name":…}}}`.
    /// The token is JSON-escaped (it may hold `"` or `\`); the envelope is validated base64 and
    /// the package name an application id, so neither needs escaping.
    package static func body(token: String, envelope: String, highPriority: Bool, packageName: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(envelope.utf8.count + token.utf8.count + 160)
        out.append(contentsOf: #"{"message":{"token":"#.utf8)
        out.append(contentsOf: JSONValue.string(token).canonicalBytes)
        out.append(contentsOf: #","data":{"hapi_v":"1","hapi_e":""#.utf8)
        out.append(contentsOf: envelope.utf8)
        out.append(contentsOf: #""},"android":{"priority":""#.utf8)
        out.append(contentsOf: (highPriority ? "HIGH" : "NORMAL").utf8)
        out.append(contentsOf: #"","restricted_package_name":""#.utf8)
        out.append(contentsOf: packageName.utf8)
        out.append(contentsOf: #""}}}"#.utf8)
        return out
    }

    /// 2xx → accepted. The token is dead only on explicit words: 404 `UNREGISTERED`, or 400
    /// `INVALID_ARGUMENT` about the token (a field violation on `message.token`, or Google's
    /// "not a valid FCM registration token"); any other `INVALID_ARGUMENT` is about our message.
    /// 429 → throttled (`QUOTA_EXCEEDED`); 500 and 503 (`INTERNAL`, `UNAVAILABLE`) → unavailable;
    /// a generic 404 (wrong project), 401/403 and the rest refused. `UNREGISTERED` at another
    /// status is kept as evidence (the relay answers `unregistered` on it).
    package static func parse(status: Int, body: [UInt8], header: (String) -> String?) -> ProviderAnswer {
        if (200...299).contains(status) { return ProviderAnswer(.accepted, status: status) }
        let error = ProviderText.jsonObject(body)?["error"]
        let googleStatus = error?["status"]?.stringValue
        let message = error?["message"]?.stringValue ?? ""
        var fcmErrorCode: String?
        var tokenFieldViolation = false
        for detail in error?["details"]?.arrayValue ?? [] {
            let type = detail["@type"]?.stringValue ?? ""
            if type.hasSuffix("google.firebase.fcm.v1.FcmError"), let code = detail["errorCode"]?.stringValue {
                fcmErrorCode = code
            }
            if type.hasSuffix("google.rpc.BadRequest") {
                for violation in detail["fieldViolations"]?.arrayValue ?? [] where violation["field"]?.stringValue == "message.token" {
                    tokenFieldViolation = true
                }
            }
        }
        let code = fcmErrorCode ?? googleStatus
        var answer = ProviderAnswer(
            status == 429 ? .throttled : status == 500 || status == 503 ? .unavailable : .refused, status: status, reason: code.map { PushDeliveryReason(rawValue: ProviderText.code($0)) } ?? .http(status),
            detail: message.isEmpty ? nil : ProviderText.excerpt(message), code: code,
            retryAfter: ProviderText.retryAfter(header("retry-after")))
        let unregistered = fcmErrorCode == "UNREGISTERED" || googleStatus == "UNREGISTERED"
        let invalidArgument = status == 400 && (fcmErrorCode == "INVALID_ARGUMENT" || googleStatus == "INVALID_ARGUMENT")
        let describedInvalid = invalidArgument && message.contains("not a valid FCM registration token")
        if unregistered {
            answer.evidence = .init(kind: .unregistered, reason: .fcmUnregistered)
        } else if invalidArgument, tokenFieldViolation {
            answer.evidence = .init(kind: .malformed, reason: .fcmInvalidArgument)
        } else if describedInvalid {
            answer.evidence = .init(kind: .described, reason: .fcmInvalidArgument)
        }
        if status == 404, unregistered {
            answer = ProviderAnswer(.tokenDead(since: nil), status: status, reason: .fcmUnregistered, code: code, evidence: answer.evidence)
        } else if invalidArgument, tokenFieldViolation || describedInvalid {
            answer = ProviderAnswer(
                .tokenDead(since: nil), status: status, reason: .fcmInvalidArgument, detail: "invalid registration token", code: code,
                evidence: answer.evidence)
        }
        return answer
    }
}
