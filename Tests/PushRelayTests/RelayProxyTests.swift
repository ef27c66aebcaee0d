import Foundation
import PushEnvelope
import PushHTTP
import PushSync
import PushTestSupport
import Testing

@testable import PushRelay

/// The relay behind an egress proxy: `RELAY_HTTPS_PROXY` (over `HTTPS_PROXY`) carries its
/// APNs, FCM and OAuth requests through tinyproxy, with Basic credentials never shown.
@Suite(.serialized) struct RelayProxyTests {
    static let password = "relay-proxy-Secret_5"

    @Test func apnsAndFCMAreForwardedThroughTheProxy() async throws {
        let started = Locked<Tinyproxy?>(nil)
        let relay = try await RelayFixture.start(environment: { providers in
            let ports = [providers.apns, providers.fcm].compactMap { URLComponents(string: $0.baseURL)?.port }
            let proxy = try Tinyproxy(connectPorts: ports, user: "relay", password: Self.password)
            started.withLock { $0 = proxy }
            return ["RELAY_HTTPS_PROXY": proxy.url(), "HTTPS_PROXY": "http://127.0.0.1:1"]
        })
        let proxy = try #require(started.withLock { $0 })
        defer { proxy.stop() }
        let ios = try await relay.push(iosPush())
        let android = try await relay.push(androidPush())
        let summary = try PushRelayConfiguration(
            environment: relayEnvironment(relay.providers).merging(["RELAY_HTTPS_PROXY": proxy.url()]) { $1 }
        ).summary
        await relay.stop()
        #expect(ios.status == 200, "\(ios.text)")
        #expect(android.status == 200, "\(android.text)")
        let apnsPort = try #require(URLComponents(string: relay.providers.apns.baseURL)?.port)
        let fcmPort = try #require(URLComponents(string: relay.providers.fcm.baseURL)?.port)
        #expect(Set(proxy.connectTargets) == ["127.0.0.1:\(apnsPort)", "127.0.0.1:\(fcmPort)"], "\(proxy.log)")
        #expect(summary.contains("egress: http://relay:***@127.0.0.1:\(proxy.port) (RELAY_HTTPS_PROXY)"), "\(summary)")
        let output = (relay.log.all + [summary]).joined(separator: "\n")
        #expect(!output.contains(Self.password))
    }

    @Test func anUnusableProxyStopsTheRelayAtStartWithoutItsPassword() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        var environment = relayEnvironment(providers)
        environment["RELAY_HTTPS_PROXY"] = "socks5://relay:\(Self.password)@127.0.0.1:1080"
        do {
            _ = try PushRelayConfiguration(environment: environment)
            Issue.record("a SOCKS proxy was accepted")
        } catch {
            #expect(error.message.hasPrefix("RELAY_HTTPS_PROXY: "), "\(error)")
            #expect(!error.message.contains(Self.password))
        }
    }
}
