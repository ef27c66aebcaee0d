import Foundation
import PushEnvelope
import PushSync
import PushTestSupport
import PushProviders
import Testing

@testable import PushNative

/// RFC 8292 VAPID: the key pair shared with the JavaScript hub's settings.json, and the JWT.
@Suite struct WebPushVAPIDTests {
    static func temporaryDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-vapid-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A pair as the `web-push` package writes it (generated here, never committed).
    static func jsHubPair() throws -> (publicKey: String, privateKey: String) {
        let key = try WebPushP256Key.generate()
        let scalar = try #require(key.privateScalar())
        return (Base64.urlEncodeUnpadded(key.publicKey), Base64.urlEncodeUnpadded(scalar))
    }

    @Test func anExistingJSHubPairIsReadAndNeverReplaced() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pair = try Self.jsHubPair()
        let text = #"{"vapidKeys":{"publicKey":"\#(pair.publicKey)","privateKey":"\#(pair.privateKey)"},"machineId":"m"}"#
        try text.write(toFile: directory + "/settings.json", atomically: true, encoding: .utf8)
        let loaded = VAPIDKeyFile.loadOrCreate(SettingsFile(directory: directory))
        #expect(loaded.warning == nil && !loaded.created)
        #expect(loaded.keyPair.map { Base64.urlEncodeUnpadded($0.publicKey) } == pair.publicKey)
        #expect(try String(contentsOfFile: directory + "/settings.json", encoding: .utf8) == text)
        let configuration = try PushConfiguration.load(environment: [:], dataDirectory: directory, persist: false)
        #expect(configuration.webPush.vapidKeys == "present")
        #expect(!configuration.description.contains(pair.privateKey))
        #expect(!configuration.jsonValue.canonicalString.contains(pair.privateKey))
    }

    @Test func aMissingPairIsGeneratedSavedAndKept() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #"{"other":1}"#.write(toFile: directory + "/settings.json", atomically: true, encoding: .utf8)
        let first = VAPIDKeyFile.loadOrCreate(SettingsFile(directory: directory))
        #expect(first.created && first.warning == nil)
        let second = VAPIDKeyFile.loadOrCreate(SettingsFile(directory: directory))
        #expect(!second.created)
        #expect(first.keyPair?.publicKey == second.keyPair?.publicKey && first.keyPair != nil)
        let saved = try JSONParser.parse(Array(try String(contentsOfFile: directory + "/settings.json", encoding: .utf8).utf8))
        #expect(saved["other"] == .integer(1))
        #expect(saved["vapidKeys"]?["publicKey"]?.stringValue.flatMap(Base64.urlDecode)?.count == 65)
        #expect(saved["vapidKeys"]?["privateKey"]?.stringValue.flatMap(Base64.urlDecode)?.count == 32)
    }

    @Test func aSaveFailureIsAWarningAndThisRunStillHasAPair() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // settings.json a link to nowhere: reads as absent, and no write can resolve it (as root too).
        #expect(symlink(directory + "/missing/dir/settings.json", directory + "/settings.json") == 0)
        let loaded = VAPIDKeyFile.loadOrCreate(SettingsFile(directory: directory))
        #expect(loaded.keyPair != nil && loaded.created)
        let warning = try #require(loaded.warning)
        #expect(warning.contains("this run only"))
        let scalar = try #require(loaded.keyPair?.privateScalar())
        #expect(!warning.contains(Base64.urlEncodeUnpadded(scalar)))
    }

    @Test func anUnusablePairIsReportedAndLeftUntouched() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pair = try Self.jsHubPair()
        let other = try Self.jsHubPair()
        let text = #"{"vapidKeys":{"publicKey":"\#(pair.publicKey)","privateKey":"\#(other.privateKey)"}}"#
        try text.write(toFile: directory + "/settings.json", atomically: true, encoding: .utf8)
        let loaded = VAPIDKeyFile.loadOrCreate(SettingsFile(directory: directory))
        #expect(loaded.keyPair == nil && loaded.warning != nil)
        #expect(try String(contentsOfFile: directory + "/settings.json", encoding: .utf8) == text)
        let configuration = try PushConfiguration.load(environment: [:], dataDirectory: directory, persist: false)
        #expect(configuration.webPush.vapidKeys == "unusable" && !configuration.webPush.isEnabled)
    }

    @Test func aRotationMakesANewCurrentPairAndKeepsTheOldOnesBesideIt() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pair = try Self.jsHubPair()
        try #"{"vapidKeys":{"publicKey":"\#(pair.publicKey)","privateKey":"\#(pair.privateKey)"},"machineId":"m"}"#
            .write(toFile: directory + "/settings.json", atomically: true, encoding: .utf8)
        let first = try PushVAPIDKeyRotation.rotate(dataDirectory: directory, now: 1_800_000_000_000)
        #expect(first.publicKey != pair.publicKey && first.previousPublicKeys == [pair.publicKey])
        let saved = try JSONParser.parse(Array(try String(contentsOfFile: directory + "/settings.json", encoding: .utf8).utf8))
        #expect(saved["machineId"] == "m")
        #expect(saved["vapidKeys"]?["publicKey"]?.stringValue == first.publicKey)
        #expect(saved["previousVapidKeys"]?.arrayValue?.first?["privateKey"]?.stringValue == pair.privateKey)
        #expect(saved["previousVapidKeys"]?.arrayValue?.first?["retiredAt"] == .integer(1_800_000_000_000))
        let loaded = VAPIDKeyFile.loadOrCreate(SettingsFile(directory: directory))
        #expect(loaded.keyPair.map { Base64.urlEncodeUnpadded($0.publicKey) } == first.publicKey && loaded.warning == nil)
        #expect(loaded.previous.map { Base64.urlEncodeUnpadded($0.publicKey) } == [pair.publicKey])
        // At most four kept, newest first.
        var current = first.publicKey
        var kept = [pair.publicKey]
        for _ in 0..<4 {
            let next = try PushVAPIDKeyRotation.rotate(dataDirectory: directory)
            kept.insert(current, at: 0)
            #expect(next.previousPublicKeys == Array(kept.prefix(4)))
            current = next.publicKey
        }
        #expect(VAPIDKeyFile.loadOrCreate(SettingsFile(directory: directory)).previous.count == 4)
    }

    @Test func dropOldEndsTheGraceAndABadPairIsNeverRotated() async throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // No pair yet: a rotation only creates one.
        let created = try PushVAPIDKeyRotation.rotate(dataDirectory: directory)
        #expect(created.previousPublicKeys.isEmpty)
        let rotated = try PushVAPIDKeyRotation.rotate(dataDirectory: directory)
        #expect(rotated.previousPublicKeys == [created.publicKey])
        #expect(try await PushVAPIDKeyRotation.dropPrevious(dataDirectory: directory, store: nil) == [created.publicKey])
        #expect(try await PushVAPIDKeyRotation.dropPrevious(dataDirectory: directory, store: nil) == [])
        let saved = try JSONParser.parse(Array(try String(contentsOfFile: directory + "/settings.json", encoding: .utf8).utf8))
        #expect(saved["previousVapidKeys"] == nil && saved["vapidKeys"]?["publicKey"]?.stringValue == rotated.publicKey)
        // An unusable current pair: refused, the file left as it is.
        let pair = try Self.jsHubPair()
        let other = try Self.jsHubPair()
        let text = #"{"vapidKeys":{"publicKey":"\#(pair.publicKey)","privateKey":"\#(other.privateKey)"}}"#
        try text.write(toFile: directory + "/settings.json", atomically: true, encoding: .utf8)
        #expect(throws: PushSettingsFileError.unparseable) { try PushVAPIDKeyRotation.rotate(dataDirectory: directory) }
        #expect(try String(contentsOfFile: directory + "/settings.json", encoding: .utf8) == text)
    }

    @Test func theSubjectIsCheckedAtLoad() throws {
        let directory = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let standard = try PushConfiguration.load(environment: [:], dataDirectory: directory, persist: false)
        #expect(standard.webPush.subject == "mailto:admin@hapi.run" && standard.webPush.isEnabled && standard.webPush.mode == "auto")
        let https = try PushConfiguration.load(environment: ["VAPID_SUBJECT": "https://hub.example.com/contact"], dataDirectory: directory, persist: false)
        #expect(https.webPush.isEnabled)
        for bad in ["admin@hapi.run", "mailto:", "http://hub.example.com", "https://", "mailto:a b@c"] {
            let configuration = try PushConfiguration.load(environment: ["VAPID_SUBJECT": bad], dataDirectory: directory, persist: false)
            #expect(!configuration.webPush.isEnabled, "\(bad)")
            #expect(configuration.diagnostics.contains { $0.setting == "VAPID_SUBJECT" && $0.level == .error })
        }
        let off = try PushConfiguration.load(environment: ["HAPI_WEB_PUSH": "off"], dataDirectory: directory, persist: false)
        #expect(!off.webPush.isEnabled)
        let unknown = try PushConfiguration.load(environment: ["HAPI_WEB_PUSH": "sometimes"], dataDirectory: directory, persist: false)
        #expect(!unknown.webPush.isEnabled && unknown.diagnostics.contains { $0.setting == "webPushMode" })
        #expect(try PushConfiguration.load(environment: ["HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS": "1"], dataDirectory: directory, persist: false).webPush.allowsPrivateEndpoints)
        try #"{"webPushAllowPrivateEndpoints":true}"#.write(toFile: directory + "/settings.json", atomically: true, encoding: .utf8)
        #expect(try PushConfiguration.load(environment: [:], dataDirectory: directory, persist: false).webPush.allowsPrivateEndpoints)
    }

    final class Clock: @unchecked Sendable {
        let now = Locked<Int64>(1_800_000_000)
    }

    @Test func theJWTVerifiesWithThePublicKeyAndIsCachedPerOrigin() async throws {
        let key = try WebPushP256Key.generate()
        let clock = Clock()
        let vapid = WebPushVAPID(keyPair: key, subject: "mailto:ops@example.com", now: { clock.now.withLock { $0 } })
        let header = try await vapid.authorization(origin: "https://push.example.net")
        #expect(header.hasPrefix("vapid t=") && header.hasSuffix(", k=" + vapid.publicKey))
        let token = String(header.dropFirst(8).prefix { $0 != "," })
        let pem = try #require(WebPushTestBrowser.publicKeyPEM(vapidPublicKey: vapid.publicKey))
        let verified = try #require(JWTVerifier.verify(token, publicKeyPEM: pem))
        #expect(verified.header == .object([(key: "typ", value: "JWT"), (key: "alg", value: "ES256")]))
        #expect(verified.claims["aud"] == "https://push.example.net")
        #expect(verified.claims["exp"] == .integer(1_800_000_000 + 12 * 3600))
        #expect(verified.claims["sub"] == "mailto:ops@example.com")
        #expect(String(decoding: JWTVerifier.base64URLDecode(String(token.prefix { $0 != "." })) ?? [], as: UTF8.self) == #"{"typ":"JWT","alg":"ES256"}"#)
        // Cached per origin until within an hour of expiry.
        clock.now.withLock { $0 += 10 * 3600 }
        let again = try await vapid.authorization(origin: "https://push.example.net")
        #expect(again == header)
        #expect(await vapid.mintCount == 1)
        _ = try await vapid.authorization(origin: "https://other.example.net")
        #expect(await vapid.mintCount == 2)
        clock.now.withLock { $0 += 3600 + 1 }
        let renewed = try await vapid.authorization(origin: "https://push.example.net")
        #expect(renewed != header)
        #expect(await vapid.mintCount == 3)
        let scalar = try #require(key.privateScalar())
        #expect(!"\(vapid)".contains(Base64.urlEncodeUnpadded(scalar)))
        #expect(!"\(key)".contains(Base64.urlEncodeUnpadded(scalar)))
    }
}
