import PushEnvelope
import PushTestSupport
import Testing

@testable import PushProviders

/// What each provider gets, byte for byte (docs/wire.md): the hub's and the relay's variants of
/// one builder, and the provider tokens.
@Suite struct RequestBuilderTests {
    static let token = String(repeating: "ab", count: 32)

    @Test func apnsForTheHubCarriesTheCutCollapseId() {
        let request = APNsProvider.request(
            token: Self.token, envelope: "ZW52", topic: "run.hapi.app", jwt: "J", priority: 10,
            collapseId: "ready-" + String(repeating: "s", count: 80))
        #expect(request.method == "POST")
        #expect(request.path == "/3/device/" + Self.token)
        #expect(request.headers.map(\.name) == ["authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id", "content-type"])
        #expect(request.headers.map(\.value) == ["bearer J", "run.hapi.app", "alert", "10", "0", "ready-" + String(repeating: "s", count: 58), "application/json"])
        #expect(String(decoding: request.body, as: UTF8.self)
            == #"{"aps":{"mutable-content":1,"alert":{"title":"HAPI","body":"New activity"},"sound":"default"},"hapi":{"v":1,"e":"ZW52"}}"#)
    }

    @Test func apnsForTheRelaySendsTheCollapseIdOnlyWhenGiven() {
        let without = APNsProvider.request(token: Self.token, envelope: "QQ==", topic: "t", jwt: "J", priority: 5, collapseId: nil)
        #expect(without.headers.map(\.name) == ["authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "content-type"])
        #expect(without.header("apns-priority") == "5")
        let with = APNsProvider.request(token: Self.token, envelope: "QQ==", topic: "t", jwt: "J", priority: 10, collapseId: "c")
        #expect(with.header("apns-collapse-id") == "c")
        #expect(with.body == without.body)
    }

    @Test func onlyWellFormedTokensReachAnAPNsPath() {
        #expect(APNsDeviceToken.isWellFormed(Self.token))
        for bad in ["", "0A", "../../admin", "ab cd", "abg0", "ab/cd"] { #expect(!APNsDeviceToken.isWellFormed(bad), "\(bad)") }
        #expect(APNsProvider.request(token: "../x", envelope: "", topic: "t", jwt: "j", priority: 10, collapseId: nil).path == "/3/device/..%2Fx")
    }

    @Test func fcmForTheHubIsTheJavaScriptHubsMessage() throws {
        let payload = PushNotificationPayload(
            type: .ready, sessionId: "s1", sessionName: "hapi", url: "/sessions/s1", title: "T", body: "B", severity: .info)
        let phone = FCMProvider.request(token: "tok", data: .payload(payload), highPriority: true, projectId: "p/../x", accessToken: "A")
        #expect(phone.path == "/v1/projects/p%2F..%2Fx/messages:send")
        #expect(phone.headers == [.init("authorization", "Bearer A"), .init("content-type", "application/json")])
        #expect(String(decoding: phone.body, as: UTF8.self).hasSuffix(#""android":{"priority":"HIGH"}}}"#))
        let wear = FCMProvider.request(token: "tok", data: .payload(payload), highPriority: false, directBootOK: true, projectId: "p", accessToken: "A")
        #expect(String(decoding: wear.body, as: UTF8.self).hasSuffix(#""android":{"priority":"NORMAL","direct_boot_ok":true}}}"#))
        #expect(String(decoding: wear.body, as: UTF8.self).hasPrefix(#"{"message":{"token":"tok","data":{"type":"ready","sessionId":"s1""#))
    }

    @Test func fcmForTheRelayCarriesTheEnvelopeToTheOfficialApp() {
        let request = FCMProvider.request(
            token: #"a"b"#, data: .envelope("QQ=="), highPriority: false, restrictedPackage: "run.hapi.companion", projectId: "relay", accessToken: "A")
        #expect(String(decoding: request.body, as: UTF8.self)
            == #"{"message":{"token":"a\"b","data":{"hapi_v":"1","hapi_e":"QQ=="},"android":{"priority":"NORMAL","restricted_package_name":"run.hapi.companion"}}}"#)
        #expect(request.path == "/v1/projects/relay/messages:send")
    }

    @Test func relayBodiesAreTheContractsInItsOrder() {
        let ios = RelayProvider.request(platform: .ios, token: "abcd", envelope: "ZW52", collapseId: "ready-0123456789abcdef", priority: 10)
        #expect(ios.path == "/v1/push")
        #expect(ios.headers == [.init("content-type", "application/json")])
        #expect(String(decoding: ios.body, as: UTF8.self)
            == #"{"platform":"ios","token":"abcd","envelope":"ZW52","collapseId":"ready-0123456789abcdef","priority":10}"#)
        let android = RelayProvider.body(platform: .android, token: "fcm:T", envelope: "QUJD", collapseId: "ignored", priority: 5)
        #expect(String(decoding: android, as: UTF8.self) == #"{"platform":"android","token":"fcm:T","envelope":"QUJD","priority":5}"#)
    }

    @Test func theAPNsProviderTokenIsMintedOnceAndVerifies() async throws {
        let keys = try #require(TestKeys.p256())
        let credentials = try APNsCredentials(pem: Array(keys.privateKeyPEM.utf8), keyId: "KEY1234567", teamId: "TEAM123456", bundleId: "b")
        let tokens = APNsProviderToken(credentials: credentials, now: { 1_800_000_000.5 })
        let first = try await tokens.token()
        #expect(try await tokens.token() == first)
        #expect(await tokens.mintCount == 1)
        let verified = try #require(JWTVerifier.verify(first, publicKeyPEM: keys.publicKeyPEM))
        #expect(verified.header == ["alg": "ES256", "kid": "KEY1234567"])
        #expect(verified.claims == ["iss": "TEAM123456", "iat": 1_800_000_000])
        // A refresh after a rejection of an older token hands out the current one.
        #expect(try await tokens.refresh(rejected: "older") == first)
        #expect(await tokens.mintCount == 1)
    }

    @Test func theOAuthAssertionFormAndAnswer() throws {
        let keys = try #require(TestKeys.rsa2048())
        let key = try JWTSigningKey(pem: Array(keys.privateKeyPEM.utf8), algorithm: .rs256, source: "test")
        let assertion = try FCMOAuth.assertion(clientEmail: "a@b.iam", tokenURI: "https://oauth.example/token", key: key, issuedAt: 1_800_000_000)
        let verified = try #require(JWTVerifier.verify(assertion, publicKeyPEM: keys.publicKeyPEM))
        #expect(verified.header == ["alg": "RS256", "typ": "JWT"])
        #expect(verified.claims["exp"] == 1_800_003_600)
        #expect(verified.claims["scope"] == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(String(decoding: FCMOAuth.form(assertion: "a.b-c_d~e+f"), as: UTF8.self)
            == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=a.b-c_d~e%2Bf")
        let ok = try FCMOAuth.parse(status: 200, body: Array(#"{"access_token":"ya29.x","expires_in":1800}"#.utf8), assertion: assertion)
        #expect(ok.token == "ya29.x" && ok.lifetime == 1800)
        #expect(try FCMOAuth.parse(status: 200, body: Array(#"{"access_token":"t"}"#.utf8), assertion: assertion).lifetime == 3600)
        #expect(throws: FCMAuthError.self) {
            try FCMOAuth.parse(status: 400, body: Array(#"{"error":"invalid_grant","error_description":"bad \#(assertion)"}"#.utf8), assertion: assertion)
        }
        do {
            _ = try FCMOAuth.parse(status: 400, body: Array(#"{"error":"invalid_grant","error_description":"bad \#(assertion)"}"#.utf8), assertion: assertion)
        } catch {
            #expect(error.message.hasPrefix("Google refused the service account (invalid_grant: bad "))
            #expect(!error.message.contains(assertion))
            #expect(error.status == 400)
        }
    }
}
