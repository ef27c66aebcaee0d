import Testing

@testable import DeviceRegistry
@testable import PushEnvelope

@Suite struct RegistrationValidationTests {
    func errors(_ platform: String, deviceId: String = "d", token: String = "tok", key: String? = nil) -> [String: [String]] {
        do {
            _ = try PushRegistrationRequest(namespace: "ns", platform: platform, deviceId: deviceId, token: token, pushKey: key)
            return [:]
        } catch {
            return error.fieldErrors
        }
    }

    @Test func platformMustBeKnown() {
        for platform in ["phone", "wear"] { #expect(errors(platform).isEmpty) }
        #expect(errors("ios", token: iosToken, key: keyA).isEmpty)
        for platform in ["android", "IOS", "", "Phone"] { #expect(errors(platform)["platform"] != nil, "\(platform)") }
    }

    @Test func deviceIdIs1To128UTF16CodeUnits() {
        #expect(errors("phone", deviceId: String(repeating: "x", count: 128)).isEmpty)
        #expect(errors("phone", deviceId: String(repeating: "x", count: 129))["deviceId"] != nil)
        #expect(errors("phone", deviceId: "")["deviceId"] != nil)
        #expect(errors("phone", deviceId: "x").isEmpty)
        // 64 emoji are 64 Characters but 128 UTF-16 code units: accepted; 65 are 130: refused,
        // exactly as JavaScript's String.length counts them.
        #expect(errors("phone", deviceId: String(repeating: "😀", count: 64)).isEmpty)
        #expect(errors("phone", deviceId: String(repeating: "😀", count: 65))["deviceId"] != nil)
        // 128 combining sequences are 128 Characters but 256 code units: refused.
        #expect(errors("phone", deviceId: String(repeating: "e\u{301}", count: 64)).isEmpty)
        #expect(errors("phone", deviceId: String(repeating: "e\u{301}", count: 65))["deviceId"] != nil)
    }

    @Test func iosTokenIsEvenHex16To512() {
        #expect(errors("ios", token: String(repeating: "a", count: 16), key: keyA).isEmpty)
        #expect(errors("ios", token: String(repeating: "a", count: 14), key: keyA)["token"] != nil)
        #expect(errors("ios", token: String(repeating: "a", count: 512), key: keyA).isEmpty)
        #expect(errors("ios", token: String(repeating: "a", count: 514), key: keyA)["token"] != nil)
        #expect(errors("ios", token: String(repeating: "a", count: 17), key: keyA)["token"]?.first?.contains("even") == true)
        #expect(errors("ios", token: String(repeating: "g", count: 16), key: keyA)["token"] != nil)
        #expect(errors("ios", token: "", key: keyA)["token"] != nil)
        #expect(errors("ios", token: "ABCDEF0123456789", key: keyA).isEmpty)
    }

    @Test func iosTokensAreStoredLowercase() throws {
        let request = try PushRegistrationRequest(namespace: "ns", platform: "ios", deviceId: "d", token: "ABCDEF0123456789", pushKey: keyA)
        #expect(request.token == "abcdef0123456789")
    }

    @Test func fcmTokenIsPrintableASCIIUpTo4096Bytes() throws {
        #expect(errors("phone", token: String(repeating: "A", count: 4096)).isEmpty)
        #expect(errors("phone", token: String(repeating: "A", count: 4097))["token"] != nil)
        #expect(errors("phone", token: "")["token"] != nil)
        #expect(errors("wear", token: "tok\n")["token"] != nil)
        #expect(errors("phone", token: "tök")["token"] != nil)
        #expect(errors("phone", token: "a b")["token"] != nil)
        #expect(errors("phone", token: "dGVzdA:APA91b-_~!").isEmpty)
        let request = try PushRegistrationRequest(namespace: "ns", platform: "phone", deviceId: "d", token: "AbC", pushKey: nil)
        #expect(request.token == "AbC")
    }

    @Test func pushKeyRules() {
        let key31 = Base64.encode([UInt8](repeating: 1, count: 31))
        let key33 = Base64.encode([UInt8](repeating: 1, count: 33))
        #expect(errors("ios", token: iosToken)["pushKey"] == ["platform \"ios\" requires pushKey: base64 of exactly 32 bytes"])
        #expect(errors("ios", token: iosToken, key: key31)["pushKey"] != nil)
        #expect(errors("ios", token: iosToken, key: key33)["pushKey"] != nil)
        #expect(errors("ios", token: iosToken, key: keyA).isEmpty)
        #expect(errors("phone").isEmpty)
        #expect(errors("phone", key: keyA).isEmpty)
        #expect(errors("phone", key: key31)["pushKey"] != nil)
        #expect(errors("phone", key: "not base64!")["pushKey"] != nil)
        // Wear ignores the field entirely, even a broken one.
        #expect(errors("wear", key: key31).isEmpty)
    }

    @Test func everyFailingFieldIsNamed() {
        let all = errors("ios", deviceId: "", token: "zz")
        #expect(Set(all.keys) == ["deviceId", "token", "pushKey"])
    }
}

@Suite struct RegistryEntryPointTests {
    func registry() -> PushDeviceRegistry { PushDeviceRegistry(store: InMemoryPushDeviceStore(), now: { 42 }) }

    func register(_ body: String) async -> PushDeviceRegistry.Answer {
        await registry().handleRegister(namespace: "ns", body: Array(body.utf8))
    }

    @Test func validBodyAnswersOK() async throws {
        let registry = registry()
        let answer = await registry.handleRegister(
            namespace: "ns", body: Array(#"{"token":"\#(iosToken)","platform":"ios","deviceId":"d","pushKey":"\#(keyA)"}"#.utf8))
        #expect(answer == .ok)
        #expect(answer.body == #"{"ok":true}"#)
        #expect(try await registry.store.devices(namespace: "ns").first?.createdAt == 42)
    }

    @Test func missingIOSKeyAnswersTheContractShape() async {
        let answer = await register(#"{"token":"\#(iosToken)","platform":"ios","deviceId":"d"}"#)
        #expect(answer.status == 400)
        #expect(
            answer.body
                == #"{"error":"Invalid body","issues":{"formErrors":[],"fieldErrors":{"pushKey":["platform \"ios\" requires pushKey: base64 of exactly 32 bytes"]}}}"#)
    }

    @Test(arguments: [
        "", "not json", "[]", "null", "42", "\"s\"", "{", #"{"token":1,"platform":"phone","deviceId":"d"}"#,
        #"{"token":"t","platform":"android","deviceId":"d"}"#, #"{"token":"t","platform":null,"deviceId":"d"}"#,
        #"{"token":"t","platform":"phone","deviceId":["d"]}"#, #"{"token":"t","platform":"phone","deviceId":"d","pushKey":7}"#,
        #"{"platform":"phone","deviceId":"d"}"#, #"{}"#,
    ])
    func badBodiesAnswer400WithFieldErrors(_ body: String) async throws {
        let answer = await register(body)
        #expect(answer.status == 400)
        let json = try JSONParser.parse(answer.body)
        #expect(json["error"] == "Invalid body")
        // zod's shape: body-level problems in formErrors, field problems in fieldErrors.
        let formErrors = try #require(json["issues"]?["formErrors"]?.arrayValue)
        let fieldErrors = try #require(json["issues"]?["fieldErrors"]?.objectValue)
        #expect(!fieldErrors.isEmpty || !formErrors.isEmpty)
        #expect(formErrors.allSatisfy { ($0.stringValue ?? "").count > 5 })
        for (_, messages) in fieldErrors {
            #expect((messages.arrayValue ?? []).allSatisfy { ($0.stringValue ?? "").count > 5 })
        }
    }

    @Test func invalidUTF8AndHugeBodiesAnswer400() async {
        #expect(await registry().handleRegister(namespace: "ns", body: [0x7B, 0xFF, 0xFE, 0x7D]).status == 400)
        let deep = String(repeating: "[", count: 50_000)
        #expect(await register(deep).status == 400)
    }

    @Test func unregisterAnswersOKEvenForUnknownTokens() async {
        let registry = registry()
        #expect(await registry.handleUnregister(namespace: "ns", body: Array(#"{"token":"nope"}"#.utf8)) == .ok)
        #expect(await registry.handleUnregister(namespace: "ns", body: Array(#"{"token":""}"#.utf8)).status == 400)
        #expect(await registry.handleUnregister(namespace: "ns", body: Array(#"{}"#.utf8)).status == 400)
        #expect(await registry.handleUnregister(namespace: "ns", body: Array("x".utf8)).status == 400)
    }

    @Test func unregisterRemovesTheRow() async throws {
        let registry = registry()
        _ = await registry.handleRegister(namespace: "ns", body: Array(#"{"token":"t","platform":"phone","deviceId":"d"}"#.utf8))
        #expect(try await registry.store.devices(namespace: "ns").count == 1)
        #expect(await registry.handleUnregister(namespace: "ns", body: Array(#"{"token":"t"}"#.utf8)) == .ok)
        #expect(try await registry.store.devices(namespace: "ns").isEmpty)
    }

    @Test func descriptionsNeverShowTokensOrKeys() throws {
        let registration = PushDeviceRegistration(
            namespace: "ns", deviceId: "d", platform: .ios, token: iosToken, pushKey: try PushKey(base64: keyA), createdAt: 1, updatedAt: 2)
        for text in [registration.description, "\(registration)", String(reflecting: registration)] {
            #expect(!text.contains(iosToken))
            #expect(!text.contains(keyA))
        }
    }
}

@Suite struct RegistrationLookalikeKeyTests {
    @Test func aKelvinSignKeyIsNotPushKey() async {
        // The JavaScript hub sees no "pushKey" here, so neither do we.
        let body = "{\"token\":\"\(iosToken)\",\"platform\":\"ios\",\"deviceId\":\"d\",\"push\u{212A}ey\":\"\(keyA)\"}"
        let answer = await PushDeviceRegistry(store: InMemoryPushDeviceStore()).handleRegister(namespace: "ns", body: Array(body.utf8))
        #expect(answer.status == 400)
        #expect(answer.body.contains("requires pushKey"))
    }
}
