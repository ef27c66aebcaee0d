public import PushEnvelope
import PushProviders

/// A registration that passed validation: exactly what the hub accepts, normalized (iOS tokens
/// lowercase, keys canonical, wear keys dropped).
public struct PushRegistrationRequest: Sendable, Equatable {
    public let namespace: String
    public let platform: PushDevicePlatform
    public let deviceId: String
    public let token: String
    public let pushKey: PushKey?

    /// Validates typed input (the CLI's flags, a hub's own forms); throws a `PushRegistrationError`
    /// naming every failing field at once, ours and the JavaScript hub's alike.
    public init(namespace: String, platform: String, deviceId: String, token: String, pushKey: String?) throws(PushRegistrationError) {
        var members: [(key: String, value: JSONValue)] = [("token", .string(token)), ("platform", .string(platform)), ("deviceId", .string(deviceId))]
        if let pushKey { members.append((key: "pushKey", value: .string(pushKey))) }
        self = try RegistrationValidation.register(namespace: namespace, body: .object(members), reportingEverything: true)
    }

    init(namespace: String, platform: PushDevicePlatform, deviceId: String, token: String, pushKey: PushKey?) {
        self.namespace = namespace
        self.platform = platform
        self.deviceId = deviceId
        self.token = token
        self.pushKey = pushKey
    }
}

/// The hub's rules for `POST`/`DELETE /api/devices/register`, in two layers:
///
/// 1. The JavaScript hub's zod schema, with its messages and order (js-hub-behaviour.md §3):
///    `token` a string of ≥ 1 UTF-16 unit, `platform` one of phone/wear/ios, `deviceId` a string
///    of 1–128 UTF-16 units, `pushKey` a string when present (every platform); for ios a key of
///    32 bytes in the hub's lenient base64, checked only when no field has a type error.
/// 2. Ours, stricter on purpose (docs/wire.md): iOS tokens even-length hex of 16–512 digits,
///    stored lowercase; FCM tokens printable ASCII of at most 4096 bytes; a phone key, when
///    given, 32 bytes (the contract: phones may use the encrypted relay); a non-empty namespace.
///
/// A body the JavaScript hub refuses gets its exact answer; layer 2 speaks only about bodies the
/// JavaScript hub would accept, in the same shape.
enum RegistrationValidation {
    static let maximumDeviceIdLength = 128
    static let maximumFCMTokenBytes = 4096

    static let iosKeyMessage = #"platform "ios" requires pushKey: base64 of exactly 32 bytes"#
    static let phoneKeyMessage = #"platform "phone" requires pushKey, when given: base64 of exactly 32 bytes"#
    static let platformMessage = #"Invalid option: expected one of "phone"|"wear"|"ios""#
    static let tooSmallMessage = "Too small: expected string to have >=1 characters"
    static let tooBigMessage = "Too big: expected string to have <=128 characters"

    /// zod's name for a value's type in "received …": the JSON type's name, or `undefined`.
    static func receivedName(_ value: JSONValue?) -> String { value?.typeName ?? "undefined" }

    static func expectedString(_ value: JSONValue?) -> String {
        "Invalid input: expected string, received \(receivedName(value))"
    }

    /// zod's messages for a value that is not a string where a string of `minimum`…`maximum`
    /// units is expected: the type error, then, for an array, the length checks zod runs on
    /// anything with a `length` (`[]` is also "too small").
    static func addNotAString(_ value: JSONValue?, field: String, maximum: Int? = nil, to issues: inout PushRegistrationError.FieldIssues) {
        issues.add(field, expectedString(value))
        guard case .array(let elements)? = value else { return }
        if elements.isEmpty { issues.add(field, "Too small: expected array to have >=1 items") }
        if let maximum, elements.count > maximum { issues.add(field, "Too big: expected array to have <=\(maximum) items") }
    }

    /// The body as a hub reads it: text (invalid UTF-8 replaced, a BOM dropped, as `Request.text()`
    /// does), then `JSON.parse`; anything that does not parse is `null`.
    static func parseBody(_ body: [UInt8]) -> JSONValue {
        var bytes = body
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        if String(validating: bytes, as: UTF8.self) == nil { bytes = Array(String(decoding: bytes, as: UTF8.self).utf8) }
        return (try? JSONParser.parse(bytes, overflowingToInfinity: true)) ?? .null
    }

    /// Validates a register body. With `reportingEverything`, our stricter rules also speak
    /// about fields the first layer accepted while others failed (for typed input, where no
    /// JavaScript answer is to be matched).
    static func register(namespace: String, body: JSONValue, reportingEverything: Bool = false) throws(PushRegistrationError)
        -> PushRegistrationRequest
    {
        var issues = PushRegistrationError.FieldIssues()
        guard case .object = body else {
            issues.addForm("Invalid input: expected object, received \(receivedName(body))")
            throw issues.error
        }
        // Layer 1: the JavaScript hub's schema, in its field order.
        var aborted = false  // a type error or an invalid option skips the ios key check
        var token: String?
        switch body["token"] {
        case .string(let text)?:
            if text.utf16.isEmpty { issues.add("token", tooSmallMessage) } else { token = text }
        case let other:
            addNotAString(other, field: "token", to: &issues)
            aborted = true
        }
        var platform: PushDevicePlatform?
        if case .string(let text)? = body["platform"], let known = PushDevicePlatform(exactly: text) {
            platform = known
        } else {
            issues.add("platform", platformMessage)
            aborted = true
        }
        var deviceId: String?
        switch body["deviceId"] {
        case .string(let text)?:
            let length = text.utf16.count
            if length < 1 {
                issues.add("deviceId", tooSmallMessage)
            } else if length > maximumDeviceIdLength {
                issues.add("deviceId", tooBigMessage)
            } else {
                deviceId = text
            }
        case let other:
            addNotAString(other, field: "deviceId", maximum: maximumDeviceIdLength, to: &issues)
            aborted = true
        }
        var keyText: String?
        switch body["pushKey"] {
        case nil: break
        case .string(let text)?: keyText = text
        case let other:
            issues.add("pushKey", expectedString(other))
            aborted = true
        }
        var pushKey: PushKey?
        if !aborted, platform == .ios {
            pushKey = keyText.flatMap { try? PushKey(lenientBase64: $0) }
            if pushKey == nil { issues.add("pushKey", iosKeyMessage) }
        }
        if !issues.isEmpty && !reportingEverything { throw issues.error }

        // Layer 2: ours.
        if namespace.isEmpty { issues.add("namespace", "namespace must not be empty") }
        if let text = token, let platform {
            token = strictToken(text, platform: platform, issues: &issues)
        }
        if platform == .phone, let keyText, !issues.has("pushKey") {
            pushKey = try? PushKey(lenientBase64: keyText)
            if pushKey == nil { issues.add("pushKey", phoneKeyMessage) }
        }
        guard issues.isEmpty, let token, let platform, let deviceId else { throw issues.error }
        // Wear is reached by direct FCM only: a key it sends is ignored, never stored.
        return PushRegistrationRequest(namespace: namespace, platform: platform, deviceId: deviceId, token: token, pushKey: platform == .wear ? nil : pushKey)
    }

    /// Validates an unregister body (`{"token": string of ≥ 1 unit}`, other keys ignored).
    static func unregister(body: JSONValue) throws(PushRegistrationError) -> String {
        var issues = PushRegistrationError.FieldIssues()
        guard case .object = body else {
            issues.addForm("Invalid input: expected object, received \(receivedName(body))")
            throw issues.error
        }
        switch body["token"] {
        case .string(let text)? where !text.utf16.isEmpty:
            return text
        case .string?:
            issues.add("token", tooSmallMessage)
        case let other:
            addNotAString(other, field: "token", to: &issues)
        }
        throw issues.error
    }

    /// Our token rules: iOS even-length hex (stored lowercase), FCM printable ASCII.
    static func strictToken(_ text: String, platform: PushDevicePlatform, issues: inout PushRegistrationError.FieldIssues) -> String? {
        let bytes = Array(text.utf8)
        switch platform {
        case .ios:
            // The provider layer's one APNs token rule; the messages name what broke it.
            switch APNsDeviceToken.flaw(text) {
            case nil:
                return text.lowercased()
            case .notHex?:
                issues.add("token", #"platform "ios" requires token: the hex APNs device token (0-9, a-f), found a non-hex character"#)
            case .oddLength(let count)?:
                issues.add("token", #"platform "ios" requires token: an even number of hex digits, got \#(count)"#)
            case .outOfRange(let count)?:
                issues.add("token", #"platform "ios" requires token: \#(APNsDeviceToken.minimumDigits)-\#(APNsDeviceToken.maximumDigits) hex digits, got \#(count)"#)
            }
            return nil
        case .phone, .wear:
            guard bytes.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
                issues.add("token", "FCM token must be printable ASCII without spaces or control characters")
                return nil
            }
            guard bytes.count <= maximumFCMTokenBytes else {
                issues.add("token", "FCM token must be at most 4096 bytes, got \(bytes.count)")
                return nil
            }
            return text
        }
    }
}

extension PushDevicePlatform {
    /// The platform whose raw value is exactly `text` (byte for byte, case-sensitive).
    init?(exactly text: String) {
        guard let platform = PushDevicePlatform.allCases.first(where: { $0.rawValue.utf8.elementsEqual(text.utf8) }) else { return nil }
        self = platform
    }
}
