import Testing

@testable import PushRelay

@Suite struct RelayPushValidationTests {
    @Test func placeholder() {
        #expect(RelayPush.isStandardBase64("AAAA"))
    }
}
