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

    /// Seals from many tasks at once share the pooled OpenSSL contexts (one borrower each) and
    /// the once-parsed recipient: every body opens, each with its own ephemeral key and salt.
    @Test func concurrentSealsForOneParsedRecipientAllDecrypt() async throws {
        let browser = try #require(WebPushTestBrowser())
        let recipient = try WebPushRecipient(p256dh: browser.p256dh, auth: browser.auth)
        let bodies = await withTaskGroup(of: [[UInt8]].self) { group in
            for worker in 0..<8 {
                group.addTask {
                    (0..<40).compactMap { i in try? WebPushCipher.seal(plaintext: Array("message \(worker)-\(i)".utf8), for: recipient) }
                }
            }
            var all: [[UInt8]] = []
            for await some in group { all += some }
            return all
        }
        #expect(bodies.count == 320)
        let opened = Set(bodies.compactMap { browser.decrypt($0).map { String(decoding: $0, as: UTF8.self) } })
        #expect(opened.count == 320)
        // Salt (0..<16) and ephemeral key (21..<86) differ in every message.
        #expect(Set(bodies.map { Array($0[0..<16]) }).count == 320)
        #expect(Set(bodies.map { Array($0[21..<86]) }).count == 320)
        #expect(throws: WebPushCryptoError.invalidSubscriptionKey) { try WebPushRecipient(p256dh: "AAAA", auth: browser.auth) }
        #expect(throws: WebPushCryptoError.invalidAuthSecret) { try WebPushRecipient(p256dh: browser.p256dh, auth: "AAAA") }
    }
}
