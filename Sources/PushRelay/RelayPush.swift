import PushEnvelope
import PushProviders

/// A valid `POST /v1/push` body: what the relay forwards. Built only by `validate`, so nothing
/// invalid can reach a provider.
struct RelayPush: Sendable, Equatable {
    /// The contract's platform names, shared with the hub's relay client.
    typealias Platform = RelayProvider.Platform

    /// The relay contract's cap (`RelayProvider.maximumEnvelopeBytes`), shared with the hub's client.
    static let maximumEnvelopeBytes = RelayProvider.maximumEnvelopeBytes

    let platform: Platform
    /// iOS: lowercase hex; Android: as sent (case-sensitive).
    let token: String
    let envelope: String
    /// iOS only, cut by `APNsCollapseId.cut` (64 bytes); nil when absent or empty (no `apns-collapse-id` is sent).
    let collapseId: String?
    /// 5 or 10.
    let priority: Int
    /// SHA-256 of `platform:token`, 64 hex digits: the rate-limit key; its first 12 digits are
    /// the log's token hash. An iOS token in any case has one hash; an Android token is exact.
    let deviceKey: String

    init(platform: Platform, token: String, envelope: String, collapseId: String?, priority: Int) {
        self.platform = platform
        self.token = token
        self.envelope = envelope
        self.collapseId = collapseId
        self.priority = priority
        deviceKey = Self.deviceKey(platform: platform, token: token)
    }

    /// The first 12 hex digits of `deviceKey`: what log lines carry instead of the token.
    var tokenHash: String { String(deviceKey.prefix(12)) }

    static func deviceKey(platform: Platform, token: String) -> String {
        let normalized = platform == .ios ? token.lowercased() : token
        return Digest.hex(Digest.sha256(Array((platform.rawValue + ":" + normalized).utf8)))
    }

    enum Validation: Sendable, Equatable {
        case valid(RelayPush)
        case invalid(RelayHTTPAnswer)
    }

    /// Checks a request body in the official relay's order and answers the first problem:
    /// 400 `bad_request` with a short message, or 413 `too_large` for an envelope over 3200 bytes.
    static func validate(_ body: [UInt8]) -> Validation {
        guard let parsed = try? JSONParser.parse(body) else { return .invalid(.badRequest("the body is not valid JSON")) }
        guard parsed.objectValue != nil else { return .invalid(.badRequest("the body must be a JSON object")) }
        let object = parsed  // members looked up byte for byte

        guard case .string(let platformName)? = object["platform"], let platform = Platform(rawValue: platformName) else {
            return .invalid(.badRequest(#"platform must be "ios" or "android""#))
        }

        guard case .string(let rawToken)? = object["token"], !rawToken.isEmpty, rawToken.utf8.count <= 4096,
            rawToken.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E })
        else {
            return .invalid(.badRequest("token must be a non-empty device token of printable ASCII, at most 4096 bytes"))
        }
        if platform == .ios, !APNsDeviceToken.isWellFormed(rawToken) {
            return .invalid(.badRequest("an iOS token must be an even number of hex digits, \(APNsDeviceToken.minimumDigits) to \(APNsDeviceToken.maximumDigits)"))
        }

        guard case .string(let envelope)? = object["envelope"], !envelope.isEmpty else {
            return .invalid(.badRequest("envelope must be a non-empty base64 string"))
        }
        // Size first, so oversized garbage is refused without looking at it.
        guard envelope.utf8.count <= maximumEnvelopeBytes else {
            return .invalid(.error(413, .tooLarge, message: "envelope is larger than \(maximumEnvelopeBytes) bytes"))
        }
        guard isStandardBase64(envelope) else { return .invalid(.badRequest("envelope must be standard base64")) }

        var collapseId: String?
        switch object["collapseId"] {
        case nil:
            collapseId = nil
        case .string(let value)?:
            if platform == .ios {
                // It becomes a header: a control character could split it.
                guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                    return .invalid(.badRequest("collapseId must not contain control characters"))
                }
                let cut = APNsCollapseId.cut(value)
                collapseId = cut.isEmpty ? nil : cut
            }
        default:
            return .invalid(.badRequest("collapseId must be a string"))
        }

        let priority: Int
        switch object["priority"] {
        case nil: priority = 10
        case .integer(let value)? where value == 5 || value == 10: priority = Int(value)
        case .double(let value)? where value == 5 || value == 10: priority = Int(value)
        default: return .invalid(.badRequest("priority must be 5 or 10"))
        }

        let token = platform == .ios ? rawToken.lowercased() : rawToken
        return .valid(RelayPush(platform: platform, token: token, envelope: envelope, collapseId: collapseId, priority: priority))
    }

    /// `[A-Za-z0-9+/]+={0,2}` with a length that is a multiple of 4, as the official relay checks.
    static func isStandardBase64(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count % 4 == 0 else { return false }
        var end = bytes.count
        while end > 0, bytes[end - 1] == UInt8(ascii: "="), bytes.count - end < 2 { end -= 1 }
        guard end > 0 else { return false }
        return bytes[..<end].allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "+"), UInt8(ascii: "/"):
                return true
            default:
                return false
            }
        }
    }
}
