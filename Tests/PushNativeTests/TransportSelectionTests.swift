import Foundation
import PushTestSupport
import Testing

import PushTransports
import DeviceRegistry
import PushEnvelope
@testable import PushNative

@Suite struct AndroidSelectionTests {
    @Test func autoWithoutServiceAccountUsesTheRelay() throws {
        let fixture = try ConfigFixture()
        let configuration = try fixture.load()
        #expect(configuration.android.mode == "auto")
        #expect(configuration.android.transport.name == "relay")
        #expect(configuration.diagnostics.isEmpty)
    }

    @Test func autoWithServiceAccountUsesDirectFCM() throws {
        let fixture = try ConfigFixture()
        fixture.environment["FCM_SERVICE_ACCOUNT_PATH"] = try fixture.serviceAccount().path
        let configuration = try fixture.load()
        guard case .fcm(let account) = configuration.android.transport else {
            Issue.record("expected fcm, got \(configuration.android.transport.name)")
            return
        }
        #expect(account.projectId == "private-project")
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
        #expect(configuration.android.reason.contains("private-project"))
    }

    @Test(arguments: ["auto", "fcm"])
    func brokenServiceAccountDisablesAndroidNeverFallingBackToTheRelay(_ mode: String) throws {
        let fixture = try ConfigFixture()
        let rsa = try #require(TestKeys.rsa2048())
        let cases: [(String, String)] = [
            ("missing", fixture.directory + "/does-not-exist.json"),
            ("malformed", try fixture.write("bad.json", "{not json")),
            ("not an object", try fixture.write("array.json", "[]")),
            ("no project", try fixture.write("np.json", JSONValue.object(["client_email": "a@b", "private_key": .string(rsa.privateKeyPEM)]).canonicalString)),
            ("bad key", try fixture.write("bk.json", #"{"project_id":"p","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}"#)),
            ("EC key", try fixture.write("ec.json", JSONValue.object(["project_id": "p", "client_email": "a@b", "private_key": .string(try #require(TestKeys.p256()).privateKeyPEM)]).canonicalString)),
        ]
        for (label, path) in cases {
            fixture.environment["HAPI_ANDROID_PUSH"] = mode
            fixture.environment["FCM_SERVICE_ACCOUNT_PATH"] = path
            let configuration = try fixture.load(persist: false)
            #expect(configuration.android.transport.name == "off", "\(label)")
            let diagnostic = configuration.diagnostics.first { $0.setting == "fcmServiceAccountPath" }
            #expect(diagnostic?.level == .error, "\(label)")
            #expect(diagnostic?.message.contains(path) == true, "\(label): \(diagnostic?.message ?? "none")")
        }
    }

    @Test func missingFieldsAreNamed() throws {
        let fixture = try ConfigFixture()
        fixture.environment["FCM_SERVICE_ACCOUNT_PATH"] = try fixture.write("sa.json", #"{"project_id":"p"}"#)
        let configuration = try fixture.load()
        let message = try #require(configuration.diagnostics.first { $0.setting == "fcmServiceAccountPath" }?.message)
        #expect(message.contains("client_email"))
        #expect(message.contains("private_key"))
        #expect(!message.contains("project_id"))
    }

    @Test func relayModeIgnoresTheServiceAccount() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_ANDROID_PUSH"] = "relay"
        fixture.environment["FCM_SERVICE_ACCOUNT_PATH"] = try fixture.serviceAccount().path
        let configuration = try fixture.load()
        #expect(configuration.android.transport.name == "relay")
        #expect(configuration.diagnostics.contains { $0.level == .info && $0.setting == "fcmServiceAccountPath" })
    }

    @Test func fcmModeRequiresAServiceAccount() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_ANDROID_PUSH"] = "fcm"
        let configuration = try fixture.load()
        #expect(configuration.android.transport.name == "off")
        let message = try #require(configuration.diagnostics.first { $0.setting == "fcmServiceAccountPath" }?.message)
        #expect(message.contains("FCM_SERVICE_ACCOUNT_PATH"))
        #expect(message.contains("fcmServiceAccountPath"))
        fixture.environment["FCM_SERVICE_ACCOUNT_PATH"] = try fixture.serviceAccount().path
        #expect(try fixture.load().android.transport.name == "fcm")
    }

    @Test func offDisablesAndroid() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_ANDROID_PUSH"] = "off"
        fixture.environment["FCM_SERVICE_ACCOUNT_PATH"] = try fixture.serviceAccount().path
        #expect(try fixture.load().android.transport.name == "off")
    }

    @Test(arguments: ["firebase", "on", "true", "direct"])
    func unknownModeDisablesAndroidListingValidModes(_ mode: String) throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_ANDROID_PUSH"] = mode
        let configuration = try fixture.load()
        #expect(configuration.android.transport.name == "off")
        let message = try #require(configuration.diagnostics.first { $0.setting == "androidPushMode" }?.message)
        for valid in ["auto", "relay", "fcm", "off"] { #expect(message.contains(valid)) }
    }

    @Test(arguments: ["ftp://relay.example.test", "not a url", "https://", "relay.example.test"])
    func invalidRelayURLDisablesRelayChannels(_ url: String) throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_PUSH_RELAY_URL"] = url
        let configuration = try fixture.load(persist: false)
        #expect(configuration.android.transport.name == "off")
        #expect(configuration.ios.transport.name == "off")
        #expect(configuration.diagnostics.contains { $0.setting == "iosPushRelayUrl" && $0.level == .error })
    }

    @Test func relayURLLosesTrailingSlashes() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_PUSH_RELAY_URL"] = "https://192.0.2.1:8790//"
        #expect(try fixture.load().relayURL == "https://192.0.2.1:8790")
    }
}

@Suite struct IOSSelectionTests {
    @Test func relayIsTheDefault() throws {
        let configuration = try ConfigFixture().load()
        #expect(configuration.ios.mode == "relay")
        #expect(configuration.ios.transport.name == "relay")
        #expect(configuration.relayURL == "https://push.hapi.run")
    }

    @Test func completeAPNsConfigurationSelectsDirectAPNs() throws {
        let fixture = try ConfigFixture()
        _ = try fixture.useAPNs()
        let configuration = try fixture.load()
        guard case .apns(let credentials, let environment) = configuration.ios.transport else {
            Issue.record("expected apns, got \(configuration.ios.transport.name): \(configuration.diagnostics)")
            return
        }
        #expect(environment == .production)
        #expect(credentials.bundleId == "run.hapi.test")
        #expect(configuration.apnsEndpoint == "https://api.push.apple.com")
        fixture.environment["APNS_ENV"] = "sandbox"
        #expect(try fixture.load(persist: false).apnsEndpoint == "https://api.sandbox.push.apple.com")
        fixture.environment["HAPI_APNS_ENDPOINT"] = "https://127.0.0.1:8443/"
        #expect(try fixture.load(persist: false).apnsEndpoint == "https://127.0.0.1:8443")
    }

    @Test(arguments: [
        ("APNS_KEY_P8_PATH", "apnsKeyP8Path"), ("APNS_KEY_ID", "apnsKeyId"), ("APNS_TEAM_ID", "apnsTeamId"), ("APNS_BUNDLE_ID", "apnsBundleId"),
    ])
    func eachMissingCredentialIsNamed(_ variable: String, _ key: String) throws {
        let fixture = try ConfigFixture()
        _ = try fixture.useAPNs()
        fixture.environment[variable] = nil
        let configuration = try fixture.load(persist: false)
        #expect(configuration.ios.transport.name == "off")
        let diagnostic = try #require(configuration.diagnostics.first { $0.setting == key })
        #expect(diagnostic.level == .error)
        #expect(diagnostic.message.contains(variable))
        #expect(diagnostic.message.contains(key))
    }

    @Test func allMissingCredentialsAreNamedAtOnce() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_IOS_PUSH"] = "apns"
        let configuration = try fixture.load()
        #expect(Set(configuration.diagnostics.map(\.setting)) == ["apnsKeyP8Path", "apnsKeyId", "apnsTeamId", "apnsBundleId"])
    }

    @Test(arguments: ["development", "prod", "staging"])
    func unknownAPNsEnvironmentDisablesIOSNeverGuessing(_ value: String) throws {
        let fixture = try ConfigFixture()
        _ = try fixture.useAPNs()
        fixture.environment["APNS_ENV"] = value
        let configuration = try fixture.load(persist: false)
        #expect(configuration.ios.transport.name == "off")
        #expect(configuration.diagnostics.contains { $0.setting == "apnsEnv" && $0.message.contains("production or sandbox") })
    }

    @Test func brokenKeysDisableIOS() throws {
        let fixture = try ConfigFixture()
        _ = try fixture.useAPNs()
        let cases = [
            fixture.directory + "/missing.p8", try fixture.write("garbage.p8", "not a key"),
            try fixture.write("p384.p8", try #require(TestKeys.p384()).privateKeyPEM),
            try fixture.write("rsa.p8", try #require(TestKeys.rsa2048()).privateKeyPEM),
        ]
        for path in cases {
            fixture.environment["APNS_KEY_P8_PATH"] = path
            let configuration = try fixture.load(persist: false)
            #expect(configuration.ios.transport.name == "off", "\(path)")
            #expect(configuration.diagnostics.contains { $0.setting == "apnsKeyP8Path" && $0.message.contains(path) }, "\(path)")
        }
    }

    @Test func offAndUnknownModes() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_IOS_PUSH"] = "off"
        #expect(try fixture.load(persist: false).ios.transport.name == "off")
        fixture.environment["HAPI_IOS_PUSH"] = "fcm"
        let configuration = try fixture.load(persist: false)
        #expect(configuration.ios.transport.name == "off")
        let message = try #require(configuration.diagnostics.first { $0.setting == "iosPushMode" }?.message)
        for valid in ["relay", "apns", "off"] { #expect(message.contains(valid)) }
    }

    @Test func iosAndAndroidAreIndependent() throws {
        let fixture = try ConfigFixture()
        _ = try fixture.useAPNs()
        fixture.environment["HAPI_ANDROID_PUSH"] = "bogus"
        let configuration = try fixture.load(persist: false)
        #expect(configuration.ios.transport.name == "apns")
        #expect(configuration.android.transport.name == "off")
    }

    @Test func unreadableCAFileIsReported() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_PUSH_CA_FILE"] = "/nonexistent/ca.pem"
        let configuration = try fixture.load(persist: false)
        #expect(configuration.caFile == nil)
        #expect(configuration.diagnostics.contains { $0.setting == "pushCaFile" && $0.level == .error })
    }
}

@Suite struct ConfigurationSecrecyTests {
    @Test func noSecretAppearsInDescriptionOrJSON() throws {
        let fixture = try ConfigFixture()
        let apnsPEM = try fixture.useAPNs()
        let account = try fixture.serviceAccount()
        fixture.environment["FCM_SERVICE_ACCOUNT_PATH"] = account.path
        let configuration = try fixture.load()
        #expect(configuration.ios.transport.name == "apns")
        #expect(configuration.android.transport.name == "fcm")
        let outputs = [
            configuration.description, configuration.jsonValue.canonicalString, String(reflecting: configuration),
            "\(configuration.ios.transport)", "\(configuration.android.transport)",
        ]
        var dumped = ""
        dump(configuration, to: &dumped)
        for output in outputs + [dumped] {
            for pem in [apnsPEM, account.pem] {
                let body = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? pem
                #expect(!output.contains(body))
            }
            #expect(!output.contains("PRIVATE KEY"))
        }
    }

    @Test func jsonHasTheDocumentedShape() throws {
        let fixture = try ConfigFixture()
        fixture.environment["HAPI_ANDROID_PUSH"] = "bogus"
        let json = try fixture.load().jsonValue
        #expect(Set(try #require(json.objectValue).map(\.key)) == ["android", "ios", "registry", "settings", "diagnostics", "egress", "webPush"])
        #expect(json["registry"]?["store"] == "sqlite")
        // The default relay for iOS, reached directly unless a proxy is configured.
        #expect(json["egress"]?["relay"] == "direct (no proxy configured)")
        #expect(Set(try #require(json["android"]?.objectValue).map(\.key)) == ["mode", "transport", "reason"])
        #expect(json["ios"]?["transport"] == "relay")
        #expect(json["settings"]?["androidPushMode"] == ["value": "bogus", "source": "env"])
        #expect(json["settings"]?["apnsKeyId"] == ["value": nil, "source": "default"])
        let diagnostic = try #require(json["diagnostics"]?.arrayValue?.first)
        #expect(Set(try #require(diagnostic.objectValue).map(\.key)) == ["level", "setting", "message"])
    }
}
