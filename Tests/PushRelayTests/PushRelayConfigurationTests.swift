import PushEnvelope
import PushHTTP
import PushLoopbackServer
import PushSync
import PushTestSupport
import PushTransports
import Testing

@testable import PushRelay

@Suite struct PushRelayConfigurationTests {
    @Test func defaultsAreTheOfficialRelays() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let configuration = try PushRelayConfiguration(environment: [
            "RELAY_APNS_KEY_P8_PATH": providers.apnsKeyPath, "RELAY_APNS_KEY_ID": "KEY", "RELAY_APNS_TEAM_ID": "TEAM",
            "RELAY_APNS_BUNDLE_ID": "run.hapi.app", "RELAY_FCM_SERVICE_ACCOUNT_PATH": providers.serviceAccountPath,
        ])
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 8790)
        #expect(configuration.trustProxy == false)
        #expect(configuration.metricsPort == nil)
        #expect(configuration.caFile == nil)
        #expect(configuration.apns?.environment == .production)
        #expect(configuration.apns?.endpoint == "https://api.push.apple.com")
        #expect(configuration.apns?.credentials.bundleId == "run.hapi.app")
        #expect(configuration.fcm?.packageName == "run.hapi.companion")
        #expect(configuration.fcm?.endpoint == "https://fcm.googleapis.com")
        #expect(configuration.fcm?.account.projectId == "hapi-demo")
        #expect(configuration.providerTimeout == .seconds(10))
    }

    @Test func valuesAreTrimmedEmptyIsUnsetAndFlagsAreStrict() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let base = ["RELAY_FCM_SERVICE_ACCOUNT_PATH": " \(providers.serviceAccountPath) "]
        let sandbox = try PushRelayConfiguration(
            environment: base.merging([
                "RELAY_APNS_KEY_P8_PATH": providers.apnsKeyPath, "RELAY_APNS_KEY_ID": " KEY ", "RELAY_APNS_TEAM_ID": "TEAM",
                "RELAY_APNS_BUNDLE_ID": "run.hapi.app", "RELAY_APNS_ENV": "Sandbox", "RELAY_PORT": "", "RELAY_TRUST_PROXY": "TRUE",
                "RELAY_HOST": "::1", "RELAY_FCM_ENDPOINT": "http://127.0.0.1:9/",
            ]) { $1 })
        #expect(sandbox.apns?.environment == .sandbox)
        #expect(sandbox.apns?.endpoint == "https://api.sandbox.push.apple.com")
        #expect(sandbox.apns?.credentials.keyId == "KEY")
        #expect(sandbox.port == 8790)
        #expect(sandbox.trustProxy)
        #expect(sandbox.host == "::1")
        #expect(sandbox.fcm?.endpoint == "http://127.0.0.1:9")
        #expect(sandbox.apns == nil ? false : true)
        for value in ["1", "true", "True"] {
            #expect(try PushRelayConfiguration(environment: base.merging(["RELAY_TRUST_PROXY": value]) { $1 }).trustProxy)
        }
        for value in ["0", "false", ""] {
            #expect(try !PushRelayConfiguration(environment: base.merging(["RELAY_TRUST_PROXY": value]) { $1 }).trustProxy)
        }
        #expect(throws: PushRelayStartupError.self) { try PushRelayConfiguration(environment: base.merging(["RELAY_TRUST_PROXY": "on"]) { $1 }) }
        #expect(throws: PushRelayStartupError.self) { try PushRelayConfiguration(environment: base.merging(["RELAY_PORT": "\t"]) { $1 }) }
        #expect(try PushRelayConfiguration(environment: base.merging(["RELAY_PORT": "0"]) { $1 }).port == 0)
        #expect(try PushRelayConfiguration(environment: base.merging(["RELAY_HOST": "localhost"]) { $1 }).host == "localhost")
    }

    @Test func connectionLimitsComeFromTheDescriptorLimitAndTheirVariables() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let base = ["RELAY_FCM_SERVICE_ACCOUNT_PATH": providers.serviceAccountPath]
        let descriptors = try #require(PushRelayServer.raiseDescriptorLimit())
        let defaults = try PushRelayConfiguration(environment: base)
        #expect(defaults.server.connectionLimit == max(64, descriptors - PushRelayConfiguration.Server.reservedDescriptors))
        #expect(defaults.server.connectionsPerAddress == 64)
        #expect(defaults.server.requestDeadlineSeconds == 10)
        #expect(defaults.server.connectionTimeoutSeconds == 30)
        // Behind a trusted proxy the proxy is the one client: no per-address limit unless set.
        #expect(try PushRelayConfiguration(environment: base.merging(["RELAY_TRUST_PROXY": "1"]) { $1 }).server.connectionsPerAddress == 0)
        let set = try PushRelayConfiguration(
            environment: base.merging(["RELAY_TRUST_PROXY": "1", "RELAY_MAX_CONNECTIONS_PER_IP": " 500 ", "RELAY_MAX_CONNECTIONS": "100"]) { $1 })
        #expect(set.server.connectionsPerAddress == 500)
        #expect(set.server.connectionLimit == 100)
        #expect(try PushRelayConfiguration(environment: base.merging(["RELAY_MAX_CONNECTIONS_PER_IP": "0"]) { $1 }).server.connectionsPerAddress == 0)
        for (name, value) in [
            ("RELAY_MAX_CONNECTIONS", "0"), ("RELAY_MAX_CONNECTIONS", "-5"), ("RELAY_MAX_CONNECTIONS", "many"),
            ("RELAY_MAX_CONNECTIONS", "\(descriptors)"), ("RELAY_MAX_CONNECTIONS_PER_IP", "1e3"), ("RELAY_MAX_CONNECTIONS_PER_IP", "99999999999"),
        ] {
            #expect(throws: PushRelayStartupError.self, "\(name)=\(value)") {
                try PushRelayConfiguration(environment: base.merging([name: value]) { $1 })
            }
            do {
                _ = try PushRelayConfiguration(environment: base.merging([name: value]) { $1 })
            } catch {
                #expect(error.message.contains(name))
            }
        }
        #expect(PushRelayConfiguration.environmentVariables.contains("RELAY_MAX_CONNECTIONS"))
        #expect(PushRelayConfiguration.environmentVariables.contains("RELAY_MAX_CONNECTIONS_PER_IP"))
    }

    @Test func bindAddresses() {
        #expect(RelayBindAddress(host: "0.0.0.0", port: 8790)?.url == "http://0.0.0.0:8790")
        #expect(RelayBindAddress(host: "::", port: 1)?.url == "http://[::]:1")
        #expect(RelayBindAddress(host: "[::1]", port: 2)?.isIPv6 == true)
        #expect(RelayBindAddress(host: "localhost", port: 3)?.host == "127.0.0.1")
        #expect(RelayBindAddress(host: "example.com", port: 3) == nil)
        #expect(RelayBindAddress(host: "127.0.0.1", port: 70000) == nil)
    }

    @Test func anIPv6ListenerAnswers() async throws {
        let relay = try RelayFixture { $0.host = "::1" }
        let client = relay.client
        let health = try? await client.send(.init(url: relay.url + "/health"))
        await relay.stop()
        #expect(relay.url.hasPrefix("http://[::1]:"))
        #expect(health?.status == 200)
    }
}
