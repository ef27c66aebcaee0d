import PushEnvelope
import PushTestSupport
import Testing

/// The sender's `aes128gcm` body opened by the browser stand-in's independent decryptor.
@Suite struct WebPushRoundTripTests {
    @Test func aBrowserDecryptsWhatWeSeal() throws {
        let browser = try #require(WebPushTestBrowser())
        let message = Array(#"{"title":"Ready for input","body":"Claude is waiting in x"}"#.utf8)
        let body = try WebPushCipher.seal(plaintext: message, subscriptionKey: browser.publicKey, authSecret: browser.authSecret)
        #expect(browser.decrypt(body) == message)
        var altered = body
        altered[altered.count - 1] ^= 1
        #expect(browser.decrypt(altered) == nil)
        let other = try #require(WebPushTestBrowser())
        #expect(other.decrypt(body) == nil)
    }

    @Test func theLargestMessageStillDecrypts() throws {
        let browser = try #require(WebPushTestBrowser())
        let message = [UInt8](repeating: 0x7A, count: WebPushCipher.maximumPlaintextByteCount)
        let body = try WebPushCipher.seal(plaintext: message, subscriptionKey: browser.publicKey, authSecret: browser.authSecret)
        #expect(body.count == 4096)
        #expect(browser.decrypt(body) == message)
    }
}
