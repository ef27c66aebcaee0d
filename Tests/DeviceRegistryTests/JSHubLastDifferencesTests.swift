import Testing

@testable import DeviceRegistry
@testable import PushEnvelope

/// Issue 21, "the last differences from the JavaScript hub": registration bodies.
@Suite struct JSHubRegistrationLastDifferencesTests {
    static let prefix = #"{"error":"Invalid body","issues":{"formErrors":[],"#

    func register(_ body: String) async -> PushDeviceRegistry.Answer {
        await PushDeviceRegistry(store: InMemoryPushDeviceStore()).handleRegister(namespace: "ns", body: Array(body.utf8))
    }

    func unregister(_ body: String) async -> PushDeviceRegistry.Answer {
        await PushDeviceRegistry(store: InMemoryPushDeviceStore()).handleUnregister(namespace: "ns", body: Array(body.utf8))
    }

    @Test func anArrayTokenOrDeviceIdGetsZodsTwoMessages() async {
        let both = #"["Invalid input: expected string, received array","Too small: expected array to have >=1 items"]"#
        #expect(await register(#"{"token":[],"platform":"phone","deviceId":"d"}"#).body == Self.prefix + #""fieldErrors":{"token":\#(both)}}}"#)
        #expect(await register(#"{"token":"t","platform":"phone","deviceId":[]}"#).body == Self.prefix + #""fieldErrors":{"deviceId":\#(both)}}}"#)
        #expect(await unregister(#"{"token":[]}"#).body == Self.prefix + #""fieldErrors":{"token":\#(both)}}}"#)
        // A non-empty array passes zod's length check: the type error alone.
        #expect(
            await register(#"{"token":["a"],"platform":"phone","deviceId":"d"}"#).body
                == Self.prefix + #""fieldErrors":{"token":["Invalid input: expected string, received array"]}}}"#)
        let long = "[" + Array(repeating: "1", count: 129).joined(separator: ",") + "]"
        #expect(
            await register(#"{"token":"t","platform":"phone","deviceId":\#(long)}"#).body
                == Self.prefix + #""fieldErrors":{"deviceId":["Invalid input: expected string, received array","Too big: expected array to have <=128 items"]}}}"#)
    }

    @Test func aNumberBeyondTheDoubleRangeIsInfinityAsJSONParseReadsIt() async {
        let number = #""fieldErrors":{"token":["Invalid input: expected string, received number"]}}}"#
        #expect(await unregister(#"{"token":1e400}"#).body == Self.prefix + number)
        #expect(await register(#"{"token":-1e400,"platform":"phone","deviceId":"d"}"#).body == Self.prefix + number)
        // The strict reader (envelopes, settings) still refuses it.
        #expect(throws: PushJSONParseError.self) { try JSONParser.parse(#"{"token":1e400}"#) }
    }
}
