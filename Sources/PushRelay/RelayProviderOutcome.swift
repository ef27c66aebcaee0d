import PushEnvelope
import PushHTTP
import PushTransports

/// What a provider's answer means to the hub that asked the relay. Deliberately not the hub's
/// own classification (`APNsTransport.classify`): the relay answers as the official relay does,
/// e.g. APNs `410 ExpiredToken` is `upstream` here, and FCM's `UNREGISTERED` is `unregistered`
/// whatever its status.
struct RelayProviderOutcome: Sendable, Equatable {
    enum Verdict: Sendable, Equatable {
        /// 200 `{"ok":true}`.
        case accepted
        /// 410 `unregistered`: the hub should drop the token.
        case unregistered
        /// 429 `rate_limited`: the provider throttled; retry later.
        case rateLimited
        /// 502 `upstream`: provider, auth or network failure.
        case upstream
    }

    var verdict: Verdict
    /// The provider's HTTP status, nil when none arrived.
    var providerStatus: Int?
    /// Apple's `reason`, FCM's error code, or ours (`timeout`, `oauth`…); sanitized for logs.
    var reason: String?

    init(_ verdict: Verdict, providerStatus: Int? = nil, reason: String? = nil) {
        self.verdict = verdict
        self.providerStatus = providerStatus
        self.reason = reason.map(Self.sanitized)
    }

    var answer: RelayHTTPAnswer {
        switch verdict {
        case .accepted: .accepted
        case .unregistered: .unregistered
        case .rateLimited: .rateLimited
        case .upstream: .upstream
        }
    }

    /// APNs: 410 `Unregistered` and 400 `BadDeviceToken` → unregistered (any other 410, such
    /// as `ExpiredToken`, is upstream); every 429 → rate limited; everything else → upstream.
    static func apns(status: Int, body: [UInt8]) -> RelayProviderOutcome {
        let reason = jsonObject(body)?["reason"]?.stringValue
        switch status {
        case 200...299: return RelayProviderOutcome(.accepted, providerStatus: status)
        case 410 where reason == "Unregistered", 400 where reason == "BadDeviceToken":
            return RelayProviderOutcome(.unregistered, providerStatus: status, reason: reason)
        case 429: return RelayProviderOutcome(.rateLimited, providerStatus: status, reason: reason)
        default: return RelayProviderOutcome(.upstream, providerStatus: status, reason: reason ?? "http_\(status)")
        }
    }

    /// FCM HTTP v1: `UNREGISTERED` (the FcmError code or the error status), or 400
    /// `INVALID_ARGUMENT` with a field violation on `message.token` → unregistered; every
    /// 429 → rate limited; everything else (a 400 on another field, 401/403 including
    /// `SENDER_ID_MISMATCH` for a wrong Firebase project, 404, 5xx) → upstream.
    static func fcm(status: Int, body: [UInt8]) -> RelayProviderOutcome {
        if (200...299).contains(status) { return RelayProviderOutcome(.accepted, providerStatus: status) }
        let error = jsonObject(body)?["error"]
        let googleStatus = error?["status"]?.stringValue
        var errorCode: String?
        var tokenFieldViolation = false
        for detail in error?["details"]?.arrayValue ?? [] {
            let type = detail["@type"]?.stringValue ?? ""
            if type.hasSuffix("google.firebase.fcm.v1.FcmError"), let code = detail["errorCode"]?.stringValue { errorCode = code }
            if type.hasSuffix("google.rpc.BadRequest") {
                for violation in detail["fieldViolations"]?.arrayValue ?? [] where violation["field"]?.stringValue == "message.token" {
                    tokenFieldViolation = true
                }
            }
        }
        let reason = errorCode ?? googleStatus ?? "http_\(status)"
        if errorCode == "UNREGISTERED" || googleStatus == "UNREGISTERED" {
            return RelayProviderOutcome(.unregistered, providerStatus: status, reason: "UNREGISTERED")
        }
        if status == 400, errorCode == "INVALID_ARGUMENT" || googleStatus == "INVALID_ARGUMENT", tokenFieldViolation {
            return RelayProviderOutcome(.unregistered, providerStatus: status, reason: "INVALID_ARGUMENT")
        }
        if status == 429 { return RelayProviderOutcome(.rateLimited, providerStatus: status, reason: reason) }
        return RelayProviderOutcome(.upstream, providerStatus: status, reason: reason)
    }

    /// No answer arrived: always upstream, with the kind of failure for the log.
    static func network(_ error: HTTPClientError) -> RelayProviderOutcome {
        let kinds: [(HTTPClientError, String)] = [
            (.dnsFailure, "dns_failure"), (.connectionRefused, "connection_refused"), (.tlsFailure, "tls_failure"),
            (.timeout, "timeout"), (.connectionLost, "connection_lost"), (.streamRefused, "stream_refused"),
            (.cancelled, "cancelled"), (.shutdown, "shutdown"), (.responseTooLarge, "response_too_large"),
            (.badResponse, "bad_response"), (.invalidRequest, "invalid_request"),
            (.proxyAuthRequired, "proxy_auth_required"), (.proxyRefused, "proxy_refused"),
        ]
        let reason = kinds.first { $0.0 == error }?.1 ?? "network_error"
        return RelayProviderOutcome(.upstream, reason: reason)
    }

    static func jsonObject(_ body: [UInt8]) -> JSONValue? {
        guard !body.isEmpty, body.count <= 65_536 else { return nil }
        guard let value = try? JSONParser.parse(body), value.objectValue != nil else { return nil }
        return value
    }

    /// Letters, digits, `_`, `-`, `.`; at most 64 of them: a provider's words never put
    /// anything else into a log line.
    static func sanitized(_ text: String) -> String {
        SafeText.sanitize(text, limit: 64, redactingTokens: true, codeOnly: true)
    }
}
