public import PushEnvelope

/// A registration that passed validation: exactly what the contract accepts, normalized
/// (iOS tokens lowercase, keys canonical, wear keys dropped).
public struct RegistrationRequest: Sendable, Equatable {
    public let namespace: String
    public let platform: DevicePlatform
    public let deviceId: String
    public let token: String
    public let pushKey: PushKey?

    /// Validates typed input; throws a `RegistrationError` naming every failing field.
    public init(namespace: String, platform: String, deviceId: String, token: String, pushKey: String?) throws(RegistrationError) {
        var issues = RegistrationError.FieldIssues()
        self.init(namespace: namespace, rawPlatform: .string(platform), rawDeviceId: .string(deviceId), rawToken: .string(token),
            rawPushKey: pushKey.map { .string($0) }, issues: &issues)
        if !issues.isEmpty { throw RegistrationError(fieldErrors: issues.errors) }
    }

    /// Validates members of a decoded JSON body. Collects every problem before failing.
    init(namespace: String, rawPlatform: JSONValue?, rawDeviceId: JSONValue?, rawToken: JSONValue?, rawPushKey: JSONValue?,
        issues: inout RegistrationError.FieldIssues)
    {
        if namespace.isEmpty { issues.add("namespace", "namespace must not be empty") }
        let platform = RegistrationValidation.platform(rawPlatform, issues: &issues)
        let deviceId = RegistrationValidation.deviceId(rawDeviceId, issues: &issues)
        let token = RegistrationValidation.token(rawToken, platform: platform, issues: &issues)
        let pushKey = RegistrationValidation.pushKey(rawPushKey, platform: platform, issues: &issues)
        self.namespace = namespace
        self.platform = platform ?? .phone
        self.deviceId = deviceId ?? ""
        self.token = token ?? ""
        self.pushKey = pushKey
    }
}

/// The contract's rules, one function per field, each adding a human-readable message.
enum RegistrationValidation {
    static let maximumDeviceIdLength = 128
    static let minimumAPNsTokenLength = 16
    static let maximumAPNsTokenLength = 512
    static let maximumFCMTokenBytes = 4096

    static func string(_ value: JSONValue?, field: String, issues: inout RegistrationError.FieldIssues) -> String? {
        guard let value else {
            issues.add(field, "\(field) is required")
            return nil
        }
        guard let text = value.stringValue else {
            issues.add(field, "\(field) must be a string, got \(value.typeName)")
            return nil
        }
        return text
    }

    static func platform(_ value: JSONValue?, issues: inout RegistrationError.FieldIssues) -> DevicePlatform? {
        guard let text = string(value, field: "platform", issues: &issues) else { return nil }
        guard let platform = DevicePlatform(rawValue: text) else {
            issues.add("platform", "platform must be \"phone\", \"wear\" or \"ios\", got \(quoted(text))")
            return nil
        }
        return platform
    }

    /// 1–128 characters counted as JavaScript counts them (UTF-16 code units), so the Swift
    /// and JavaScript hubs accept and refuse the same ids.
    static func deviceId(_ value: JSONValue?, issues: inout RegistrationError.FieldIssues) -> String? {
        guard let text = string(value, field: "deviceId", issues: &issues) else { return nil }
        let length = text.utf16.count
        guard length >= 1, length <= maximumDeviceIdLength else {
            issues.add("deviceId", "deviceId must be 1-128 characters (UTF-16 code units), got \(length)")
            return nil
        }
        return text
    }

    static func token(_ value: JSONValue?, platform: DevicePlatform?, issues: inout RegistrationError.FieldIssues) -> String? {
        guard let text = string(value, field: "token", issues: &issues) else { return nil }
        guard !text.isEmpty else {
            issues.add("token", "token must not be empty")
            return nil
        }
        switch platform {
        case .ios:
            let bytes = Array(text.utf8)
            let isHex = bytes.allSatisfy { isHexDigit($0) }
            guard isHex else {
                issues.add("token", "platform \"ios\" requires token: the hex APNs device token (0-9, a-f), found a non-hex character")
                return nil
            }
            guard bytes.count % 2 == 0 else {
                issues.add("token", "platform \"ios\" requires token: an even number of hex digits, got \(bytes.count)")
                return nil
            }
            guard bytes.count >= minimumAPNsTokenLength, bytes.count <= maximumAPNsTokenLength else {
                issues.add("token", "platform \"ios\" requires token: 16-512 hex digits, got \(bytes.count)")
                return nil
            }
            return text.lowercased()
        case .phone, .wear:
            let bytes = Array(text.utf8)
            guard bytes.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
                issues.add("token", "FCM token must be printable ASCII without spaces or control characters")
                return nil
            }
            guard bytes.count <= maximumFCMTokenBytes else {
                issues.add("token", "FCM token must be at most 4096 bytes, got \(bytes.count)")
                return nil
            }
            return text
        case nil:
            return text
        }
    }

    static func pushKey(_ value: JSONValue?, platform: DevicePlatform?, issues: inout RegistrationError.FieldIssues) -> PushKey? {
        switch platform {
        case .wear:
            // Wear is reached by direct FCM only; a key it sends is ignored, never stored.
            return nil
        case .ios:
            guard let value, value != .null else {
                issues.add("pushKey", "platform \"ios\" requires pushKey: base64 of exactly 32 bytes")
                return nil
            }
            return parseKey(value, platform: "ios", issues: &issues)
        case .phone:
            guard let value else { return nil }
            return parseKey(value, platform: "phone", issues: &issues)
        case nil:
            if let value, value.stringValue == nil {
                issues.add("pushKey", "pushKey must be a string, got \(value.typeName)")
            }
            return nil
        }
    }

    private static func parseKey(_ value: JSONValue, platform: String, issues: inout RegistrationError.FieldIssues) -> PushKey? {
        guard let text = value.stringValue else {
            issues.add("pushKey", "pushKey must be a string (base64 of exactly 32 bytes), got \(value.typeName)")
            return nil
        }
        do {
            return try PushKey(base64: text)
        } catch {
            issues.add("pushKey", "platform \"\(platform)\" \(error.description)")
            return nil
        }
    }

    static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46)
    }

    /// Quotes a value for an error message, shortened so a hostile body cannot flood a log.
    static func quoted(_ text: String) -> String {
        let limit = 40
        let shown = text.count > limit ? String(text.prefix(limit)) + "…" : text
        return "\"" + shown.unicodeScalars.map { $0.value < 0x20 ? "?" : String($0) }.joined() + "\""
    }
}
