import Foundation
import PushTestSupport
import Testing

import DeviceRegistry
import PushEnvelope
import PushHTTP
@testable import PushNative

// A hub whose only way out is an authenticated HTTP proxy (tinyproxy): every channel — the
// relay, direct APNs, FCM and Google's OAuth exchange — goes through it, NO_PROXY is honoured,
// a wrong password fails the deliveries as `proxy_auth_required`, and the proxy's password
// appears in no configuration, report, diagnostic or log line.
@Suite(.serialized) struct ProxyDispatchTests {
    static let password = "hub-proxy-Secret_77"

    /// The stand-ins' hub environment without the proxy variables SecretWorld adds.
    static func environment(_ world: SecretWorld, ios: String, android: String, dataDirectory: String) -> [String: String] {
        var environment = world.environment(ios: ios, android: android, dataDirectory: dataDirectory)
        for name in ["HTTPS_PROXY", "HAPI_PUSH_HTTPS_PROXY", "NO_PROXY", "HAPI_PUSH_NO_PROXY"] { environment[name] = nil }
        return environment
    }

    /// Registers `devices`, dispatches once, and returns the report with everything printable.
    static func dispatch(
        world: SecretWorld, environment: [String: String], dataDirectory: String, devices: [SecretWorld.Device], logger: TextCapturingLogger
    ) async throws -> (PushDispatchReport, [String]) {
        let configuration = try PushConfiguration.load(environment: environment, dataDirectory: dataDirectory)
        var captured = [configuration.description, String(reflecting: configuration), configuration.jsonValue.canonicalString]
        captured += configuration.diagnostics.map(\.description)
        let push = try NativePush(
            configuration: configuration, store: try SQLitePushDeviceStore(directory: dataDirectory),
            runtime: NativePush.Configuration(timeouts: .init(request: .seconds(5))), logger: logger)
        for device in devices {
            var fields: [String: JSONValue] = ["platform": .string(device.platform), "deviceId": .string(device.deviceId), "token": .string(device.token)]
            if let key = device.key { fields["pushKey"] = .string(key.base64) }
            let answer = await push.register(namespace: "ns", body: JSONValue.object(fields).canonicalBytes)
            #expect(answer.status == 200)
        }
        let report = try await push.dispatch(readyPayloadForSecrets, namespace: "ns")
        captured += [report.description, String(reflecting: report), report.jsonValue.canonicalString]
        await push.shutdown()
        if let settings = try? String(contentsOfFile: dataDirectory + "/settings.json", encoding: .utf8) { captured.append(settings) }
        return (report, captured)
    }

    @Test func everyChannelGoesThroughTheProxyAndItsPasswordNowhere() async throws {
        let world = try SecretWorld()
        defer { world.stop() }
        let ports = [world.providers.relay, world.providers.apns, world.providers.fcm].compactMap { URLComponents(string: $0.baseURL)?.port }
        let proxy = try Tinyproxy(connectPorts: ports, user: "hub", password: Self.password)
        defer { proxy.stop() }
        let logger = TextCapturingLogger()
        var captured: [String] = []

        for (ios, android) in [("apns", "fcm"), ("relay", "relay")] {
            let dataDirectory = world.directory + "/proxy-\(ios)-\(android)"
            var environment = Self.environment(world, ios: ios, android: android, dataDirectory: dataDirectory)
            environment["HAPI_PUSH_HTTPS_PROXY"] = proxy.url()
            environment["HTTPS_PROXY"] = "http://127.0.0.1:1"  // overridden by the setting
            let devices = try world.devices(ios: ios, android: android, scenarios: [.ok])
            let before = proxy.connectTargets.count
            let (report, text) = try await Self.dispatch(
                world: world, environment: environment, dataDirectory: dataDirectory, devices: devices, logger: logger)
            captured += text
            for delivery in report.deliveries where delivery.outcome != .skipped {
                #expect(delivery.outcome == .sent, "\(ios)/\(android): \(delivery)")
            }
            #expect(report.deliveries.filter { $0.outcome == .sent }.count >= 2)
            let targets = Array(proxy.connectTargets.dropFirst(before))
            let expected: Set<String> =
                ios == "apns"
                ? ["127.0.0.1:\(ports[1])", "127.0.0.1:\(ports[2])"]  // APNs; FCM and its OAuth endpoint share an origin
                : ["127.0.0.1:\(ports[0])"]
            #expect(Set(targets) == expected, "\(proxy.log)")
            #expect(text[0].contains("egress: ") && text[0].contains("hub:***@127.0.0.1:\(proxy.port) (httpsProxy)"), "\(text[0])")
        }

        // NO_PROXY (the hub's setting) matching the stand-ins: direct, nothing through the proxy.
        let directDirectory = world.directory + "/proxy-direct"
        var direct = Self.environment(world, ios: "relay", android: "relay", dataDirectory: directDirectory)
        direct["HAPI_PUSH_HTTPS_PROXY"] = proxy.url()
        direct["HAPI_PUSH_NO_PROXY"] = "localhost,127.0.0.0/8"
        let before = proxy.connectTargets.count
        let (directReport, directText) = try await Self.dispatch(
            world: world, environment: direct, dataDirectory: directDirectory,
            devices: try world.devices(ios: "relay", android: "relay", scenarios: [.ok]), logger: logger)
        captured += directText
        #expect(directReport.deliveries.filter { $0.outcome == .sent }.count >= 2, "\(directReport)")
        #expect(proxy.connectTargets.count == before)
        #expect(directText[0].contains("egress: relay → direct (noProxy matches 127.0.0.0/8)"), "\(directText[0])")

        // A wrong password: every delivery fails as proxy_auth_required, nothing reaches a provider.
        world.providers.clearRequests()
        let wrongDirectory = world.directory + "/proxy-wrong"
        var wrong = Self.environment(world, ios: "apns", android: "fcm", dataDirectory: wrongDirectory)
        wrong["HTTPS_PROXY"] = proxy.url(password: "not-the-" + Self.password)
        let (wrongReport, wrongText) = try await Self.dispatch(
            world: world, environment: wrong, dataDirectory: wrongDirectory,
            devices: try world.devices(ios: "apns", android: "fcm", scenarios: [.ok]), logger: logger)
        captured += wrongText
        for delivery in wrongReport.deliveries where delivery.transport == .apns {
            #expect(delivery.outcome == .failed && delivery.reason == .proxyAuthRequired, "\(delivery)")
        }
        #expect(world.providers.apns.requests.isEmpty)

        captured.append(logger.text)
        let all = captured.joined(separator: "\n")
        #expect(!all.contains(Self.password), "the proxy password leaked")
        #expect(world.leaks(in: all).isEmpty)
    }
}
