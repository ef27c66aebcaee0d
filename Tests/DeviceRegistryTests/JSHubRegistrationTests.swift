import Foundation
import Testing

@testable import DeviceRegistry
@testable import PushEnvelope

/// js-hub-behaviour.md §3 (and §6.5's timestamps): every verified example of the JavaScript
/// hub's registration, answered byte for byte, plus our deliberate differences.
@Suite struct JSHubRegistrationTests {
    static let prefix = #"{"error":"Invalid body","issues":{"formErrors":[],"#
    static let platformMessage = #"Invalid option: expected one of \"phone\"|\"wear\"|\"ios\""#
    static let iosKey = #"platform \"ios\" requires pushKey: base64 of exactly 32 bytes"#

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let body: [UInt8]
        let answer: String
        init(_ name: String, _ body: String, _ answer: String) {
            self.name = name
            self.body = Array(body.utf8)
            self.answer = answer
        }
        init(_ name: String, bytes: [UInt8], _ answer: String) {
            self.name = name
            self.body = bytes
            self.answer = answer
        }
        var testDescription: String { name }
    }

    static let notAnObject = #"{"error":"Invalid body","issues":{"formErrors":["Invalid input: expected object, received null"],"fieldErrors":{}}}"#

    static let cases: [Case] = [
        Case("§3.3 invalid JSON", "{not json", notAnObject),
        Case("§3.3 empty body", "", notAnObject),
        Case("§3.3 null", "null", notAnObject),
        Case("§3.3 []", "[]", notAnObject.replacingOccurrences(of: "received null", with: "received array")),
        Case("§3.3 number (zod's type names)", "42", notAnObject.replacingOccurrences(of: "received null", with: "received number")),
        Case("§3.3 string (zod's type names)", #""s""#, notAnObject.replacingOccurrences(of: "received null", with: "received string")),
        Case("§3.3 boolean (zod's type names)", "true", notAnObject.replacingOccurrences(of: "received null", with: "received boolean")),
        Case(
            "§3.3 {}", "{}",
            prefix
                + #""fieldErrors":{"token":["Invalid input: expected string, received undefined"],"platform":["\#(platformMessage)"],"deviceId":["Invalid input: expected string, received undefined"]}}}"#
        ),
        Case(
            "§3.3 empty token and deviceId", #"{"token":"","platform":"phone","deviceId":""}"#,
            prefix
                + #""fieldErrors":{"token":["Too small: expected string to have >=1 characters"],"deviceId":["Too small: expected string to have >=1 characters"]}}}"#
        ),
        Case("§3.3 android", #"{"token":"t","platform":"android","deviceId":"d"}"#, prefix + #""fieldErrors":{"platform":["\#(platformMessage)"]}}}"#),
        Case(
            "§3.3 deviceId of 129", #"{"token":"t","platform":"phone","deviceId":"\#(String(repeating: "x", count: 129))"}"#,
            prefix + #""fieldErrors":{"deviceId":["Too big: expected string to have <=128 characters"]}}}"#),
        Case("§3.3 ios without pushKey", #"{"token":"t","platform":"ios","deviceId":"d"}"#, prefix + #""fieldErrors":{"pushKey":["\#(iosKey)"]}}}"#),
        Case(
            "§3.3 length errors do not stop the ios check",
            #"{"token":"","platform":"ios","deviceId":"\#(String(repeating: "x", count: 129))","pushKey":"bad"}"#,
            prefix
                + #""fieldErrors":{"token":["Too small: expected string to have >=1 characters"],"deviceId":["Too big: expected string to have <=128 characters"],"pushKey":["\#(iosKey)"]}}}"#
        ),
        Case(
            "§3.3 type errors stop the ios check", #"{"platform":"ios"}"#,
            prefix
                + #""fieldErrors":{"token":["Invalid input: expected string, received undefined"],"deviceId":["Invalid input: expected string, received undefined"]}}}"#
        ),
        Case(
            "§3.3 ios pushKey 5", #"{"token":"t","platform":"ios","deviceId":"d","pushKey":5}"#,
            prefix + #""fieldErrors":{"pushKey":["Invalid input: expected string, received number"]}}}"#),
        Case(
            "§3.3 phone pushKey null", #"{"token":"t","platform":"phone","deviceId":"d","pushKey":null}"#,
            prefix + #""fieldErrors":{"pushKey":["Invalid input: expected string, received null"]}}}"#),
        // §3.2: a present pushKey must be a string on every platform, wear included.
        Case(
            "§3.2 wear pushKey 5", #"{"token":"t","platform":"wear","deviceId":"d","pushKey":5}"#,
            prefix + #""fieldErrors":{"pushKey":["Invalid input: expected string, received number"]}}}"#),
        Case(
            "§3.2 wear pushKey object", #"{"token":"t","platform":"wear","deviceId":"d","pushKey":{}}"#,
            prefix + #""fieldErrors":{"pushKey":["Invalid input: expected string, received object"]}}}"#),
        Case(
            "§3.2 platform is case-sensitive", #"{"token":"t","platform":"IOS","deviceId":"d"}"#,
            prefix + #""fieldErrors":{"platform":["\#(platformMessage)"]}}}"#),
        Case(
            "§3.2 token must be a string", #"{"token":["t"],"platform":"phone","deviceId":"d"}"#,
            prefix + #""fieldErrors":{"token":["Invalid input: expected string, received array"]}}}"#),
        Case(
            "§3.2 deviceId must be a string", #"{"token":"t","platform":"phone","deviceId":true}"#,
            prefix + #""fieldErrors":{"deviceId":["Invalid input: expected string, received boolean"]}}}"#),
        Case(
            "§3.1 duplicate keys: the last wins", #"{"token":"t","platform":"android","deviceId":"d","platform":"phone"}"#, #"{"ok":true}"#),
        Case("§3.1 unknown keys are ignored", #"{"token":"t","platform":"phone","deviceId":"d","extra":[1]}"#, #"{"ok":true}"#),
        Case("§3.3 success", #"{"token":"t","platform":"phone","deviceId":"d"}"#, #"{"ok":true}"#),
        Case("§3.1 invalid UTF-8 is read as text first", bytes: [0x7B, 0xFF, 0xFE, 0x7D], notAnObject),
        Case("§3.1 a BOM is dropped as Request.text() drops it", bytes: [0xEF, 0xBB, 0xBF] + Array(#"{"token":"t","platform":"phone","deviceId":"d"}"#.utf8), #"{"ok":true}"#),
    ]

    @Test("§3.3 register answers", arguments: cases)
    func registerAnswers(_ example: Case) async {
        let answer = await PushDeviceRegistry(store: InMemoryPushDeviceStore()).handleRegister(namespace: "ns", body: example.body)
        #expect(answer.body == example.answer, "\(example.name)")
        #expect(answer.status == (example.answer == #"{"ok":true}"# ? 200 : 400))
    }

    static let key09 = "CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk="

    /// (pushKey, stored canonical key or nil when refused)
    static let keys: [(String, String?)] = [
        (key09, key09),  // 32 × 0x09, stored unchanged
        (String(key09.dropLast()), key09),  // without "=" (43 characters): stored with "="
        (key09 + "=", key09),  // "==" (45 characters): stored with one "="
        (key09 + "==", nil),  // "==="
        ("CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQl=", key09),  // non-zero trailing bits dropped
        ("+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/s=", "+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/v7+/s="),  // 32 × 0xFB
        ("-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_v7-_s", nil),  // URL-safe
        (" " + key09, nil), (key09 + "\n", nil),  // a leading space, a trailing newline
        (String(key09.prefix(42)), nil),  // 42 characters
        (String(key09.dropLast()) + "Q", nil),  // 44 characters without padding
        ("AAAA", nil), ("", nil), ("=" + String(key09.dropLast()), nil),
    ]

    @Test("§3.2 ios pushKey acceptance and canonical storage", arguments: keys)
    func iosPushKeys(_ key: String, _ stored: String?) async throws {
        let store = InMemoryPushDeviceStore()
        let body = JSONValue.object([("token", .string(iosToken)), ("platform", "ios"), ("deviceId", "d"), ("pushKey", .string(key))]).canonicalBytes
        let answer = await PushDeviceRegistry(store: store).handleRegister(namespace: "ns", body: body)
        if let stored {
            #expect(answer == .ok, "\(key)")
            #expect(store.devices(namespace: "ns", platforms: nil).first?.pushKey?.base64 == stored)
        } else {
            #expect(answer.body == Self.prefix + #""fieldErrors":{"pushKey":["\#(Self.iosKey)"]}}}"#, "\(key)")
        }
    }

    @Test("§3.2 deviceId is 1–128 UTF-16 units of any characters") func deviceIdLengths() async {
        for (deviceId, accepted) in [(String(repeating: "😀", count: 64), true), (String(repeating: "😀", count: 65), false), ("a\u{0}b", true)] {
            let body = JSONValue.object([("token", "t"), ("platform", "phone"), ("deviceId", .string(deviceId))]).canonicalBytes
            let answer = await PushDeviceRegistry(store: InMemoryPushDeviceStore()).handleRegister(namespace: "ns", body: body)
            #expect((answer.status == 200) == accepted)
        }
    }

    // MARK: - Deliberate differences (docs/wire.md), each in the same 400 shape

    @Test(
        "§3.2 stricter than JavaScript, in the same shape",
        arguments: [
            // JS accepts any non-empty token; we want the hex APNs token (stored lowercase) …
            (#"{"token":"t","platform":"ios","deviceId":"d","pushKey":"\#(key09)"}"#, "token", "hex APNs device token"),
            (#"{"token":"abc","platform":"ios","deviceId":"d","pushKey":"\#(key09)"}"#, "token", "even number of hex digits"),
            (#"{"token":"abcd","platform":"ios","deviceId":"d","pushKey":"\#(key09)"}"#, "token", "16-512 hex digits"),
            // … and printable ASCII FCM tokens of at most 4096 bytes.
            (#"{"token":" ","platform":"phone","deviceId":"d"}"#, "token", "printable ASCII"),
            (#"{"token":"\#(String(repeating: "A", count: 4097))","platform":"wear","deviceId":"d"}"#, "token", "at most 4096 bytes"),
            // SPEC WINS: a phone key, when given, must be 32 bytes (JS discards "junk").
            (#"{"token":"t","platform":"phone","deviceId":"d","pushKey":"junk"}"#, "pushKey", "base64 of exactly 32 bytes"),
            (#"{"token":"t","platform":"phone","deviceId":"d","pushKey":""}"#, "pushKey", "base64 of exactly 32 bytes"),
        ])
    func stricterRules(_ body: String, _ field: String, _ message: String) async throws {
        let answer = await PushDeviceRegistry(store: InMemoryPushDeviceStore()).handleRegister(namespace: "ns", body: Array(body.utf8))
        #expect(answer.status == 400)
        #expect(answer.body.hasPrefix(Self.prefix + #""fieldErrors":{""# + field + #"":[""#), "\(answer.body)")
        #expect(answer.body.contains(message), "\(answer.body)")
        let parsed = try JSONParser.parse(answer.body)
        #expect(parsed["issues"]?["fieldErrors"]?.objectValue?.count == 1)
        #expect(!answer.body.contains("AAAA") && !answer.body.contains("junk"))  // no value is echoed
    }

    @Test("§3.2 phone keys are stored canonical, wear keys ignored (SPEC WINS)") func phoneAndWearKeys() async throws {
        let store = InMemoryPushDeviceStore()
        let registry = PushDeviceRegistry(store: store)
        let unpadded = String(Self.key09.dropLast())
        #expect(await registry.handleRegister(namespace: "ns", body: Array(#"{"token":"p","platform":"phone","deviceId":"p","pushKey":"\#(unpadded)"}"#.utf8)) == .ok)
        #expect(await registry.handleRegister(namespace: "ns", body: Array(#"{"token":"w","platform":"wear","deviceId":"w","pushKey":"junk"}"#.utf8)) == .ok)
        let devices = store.devices(namespace: "ns", platforms: nil)
        #expect(devices.first { $0.platform == .phone }?.pushKey?.base64 == Self.key09)
        #expect(devices.first { $0.platform == .wear }?.pushKey == nil)
    }

    @Test("§3.4 a token moves across namespaces; ios tokens are stored lowercase (deliberate)") func tokenMoves() async throws {
        let store = InMemoryPushDeviceStore()
        let registry = PushDeviceRegistry(store: store, now: { 1_787_400_000_000 })
        let upper = iosToken.uppercased()
        let body = #"{"token":"\#(upper)","platform":"ios","deviceId":"d","pushKey":"\#(Self.key09)"}"#
        #expect(await registry.handleRegister(namespace: "a", body: Array(body.utf8)) == .ok)
        #expect(await registry.handleRegister(namespace: "b", body: Array(body.utf8)) == .ok)
        #expect(store.devices(namespace: "a", platforms: nil).isEmpty)
        let row = try #require(store.devices(namespace: "b", platforms: nil).first)
        #expect(row.token == iosToken)  // JS stores the token byte for byte; we store APNs hex lowercase
        // §6.5: timestamps are Unix epoch milliseconds (2026-08-22 12:00:00 UTC).
        #expect(row.createdAt == 1_787_400_000_000)
        #expect(row.updatedAt == 1_787_400_000_000)
    }

    static let unregisterCases: [Case] = [
        Case(
            "§3.5 {}", "{}", prefix + #""fieldErrors":{"token":["Invalid input: expected string, received undefined"]}}}"#),
        Case("§3.5 empty token", #"{"token":""}"#, prefix + #""fieldErrors":{"token":["Too small: expected string to have >=1 characters"]}}}"#),
        Case("§3.5 token 5", #"{"token":5}"#, prefix + #""fieldErrors":{"token":["Invalid input: expected string, received number"]}}}"#),
        Case("§3.5 not JSON", "x", notAnObject),
        Case("§3.5 unknown token answers ok", #"{"token":"nobody","other":1}"#, #"{"ok":true}"#),
    ]

    @Test("§3.5 unregister answers", arguments: unregisterCases)
    func unregisterAnswers(_ example: Case) async {
        let answer = await PushDeviceRegistry(store: InMemoryPushDeviceStore()).handleUnregister(namespace: "ns", body: example.body)
        #expect(answer.body == example.answer, "\(example.name)")
        #expect(answer.status == (example.answer == #"{"ok":true}"# ? 200 : 400))
    }

    @Test("§3.5 unregister removes the namespace's rows holding the token, and only those") func unregisterScope() async throws {
        let store = InMemoryPushDeviceStore()
        let registry = PushDeviceRegistry(store: store)
        _ = await registry.handleRegister(namespace: "ns", body: Array(#"{"token":"t1","platform":"phone","deviceId":"p"}"#.utf8))
        _ = await registry.handleRegister(namespace: "other", body: Array(#"{"token":"t2","platform":"phone","deviceId":"p"}"#.utf8))
        #expect(await registry.handleUnregister(namespace: "ns", body: Array(#"{"token":"t2"}"#.utf8)) == .ok)
        #expect(store.devices(namespace: "other", platforms: nil).count == 1)
        #expect(await registry.handleUnregister(namespace: "ns", body: Array(#"{"token":"t1"}"#.utf8)) == .ok)
        #expect(store.devices(namespace: "ns", platforms: nil).isEmpty)
    }

    @Test("typed input names every problem at once") func typedInputReportsEverything() {
        do {
            _ = try PushRegistrationRequest(namespace: "", platform: "ios", deviceId: "", token: "zz", pushKey: nil)
            Issue.record("accepted")
        } catch {
            #expect(error.orderedFieldErrors.map(\.field) == ["deviceId", "pushKey", "namespace", "token"])
            #expect(error.formErrors.isEmpty)
        }
    }
}
