import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushEnvelope
import PushHTTP
import PushLoopbackServer
import DeviceRegistry
import PushNative
import PushSync
import PushTestSupport
import PushTransports
import Testing

@testable import PushRelay

/// A hub (`NativePush`, HAPI_PUSH_RELAY_URL pointing at our relay) dispatching to an iPhone and
/// an Android phone through the built `hapi-push-relay`, and each device's envelope opened on
/// the far side of APNs and FCM with that device's key.
@Suite struct RelayEndToEndTests {
    @Test func aHubDispatchesThroughOurRelayAndDevicesOpenTheirEnvelopes() async throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let relay = try RelayProcess(environment: relayEnvironment(providers))
        defer { relay.terminate() }
        let relayURL = try #require(await relay.listeningURL(), "no listening line: \(relay.stderr)")

        let directory = providers.directory + "/hub"
        var environment = providers.environment(iosMode: "relay", androidMode: "relay", dataDirectory: directory)
        environment["HAPI_PUSH_RELAY_URL"] = relayURL + "/"
        let configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: false)
        let push = try NativePush(configuration: configuration, store: InMemoryPushDeviceStore())
        let iosKey = try PushKey.generate()
        let phoneKey = try PushKey.generate()
        let iosToken = String(repeating: "C0", count: 32)
        let phoneToken = "fcm:Phone-Token_42"
        for (platform, id, token, key) in [("ios", "iphone", iosToken, iosKey), ("phone", "pixel", phoneToken, phoneKey)] {
            let body = JSONValue.object(["platform": .string(platform), "deviceId": .string(id), "token": .string(token), "pushKey": .string(key.base64)])
            let answer = await push.register(namespace: "ns", body: body.canonicalBytes)
            #expect(answer.status == 200)
        }
        let payloads = [
            PushNotificationComposer.ready(for: PushSession(id: "s-1", metadata: ["flavor": "claude", "name": "hapi"]), messages: []),
            PushNotificationComposer.permissionRequest(
                for: PushSession(
                    id: "s-2", metadata: ["flavor": "codex", "name": "hapi"], agentState: ["requests": ["r-1": ["tool": "Bash", "arguments": ["command": "ls -la"]]]])),
        ]
        for payload in payloads {
            let report = try await push.dispatch(payload, namespace: "ns")
            #expect(report.suppressWebPush)
            for delivery in report.deliveries {
                #expect(delivery.outcome == .sent, "\(delivery.deviceId): \(delivery.reasonText ?? "")")
                #expect(delivery.transport == .relay)
            }
        }
        await push.shutdown()

        // APNs: the wrapped body; the iPhone opens hapi.e with its key.
        let apns = providers.apns.requests
        #expect(apns.count == 2)
        for (request, payload) in zip(apns, payloads) {
            #expect(request.path == "/3/device/" + iosToken.lowercased())
            #expect(request.header("apns-collapse-id") == "\(payload.type.rawValue)-\(payload.sessionId)")
            let body = try JSONParser.parse(request.body)
            #expect(body["aps"]?["mutable-content"] == 1)
            let envelope = try #require(body["hapi"]?["e"]?.stringValue)
            #expect(try ReceivedPush.decode(version: "1", envelope: envelope, key: iosKey) == payload)
            #expect(throws: PushEnvelopeError.self) { try ReceivedPush.decode(version: "1", envelope: envelope, key: phoneKey) }
            #expect(!request.bodyString.contains("Claude") && !request.bodyString.contains("Codex"))
        }
        // FCM: data-only hapi_v/hapi_e; the phone opens hapi_e with its key.
        let fcm = providers.fcm.requests.filter { $0.path != "/token" }
        #expect(fcm.count == 2)
        for (request, payload) in zip(fcm, payloads) {
            let message = try #require(try JSONParser.parse(request.body)["message"])
            #expect(message["token"]?.stringValue == phoneToken)
            #expect(message["notification"] == nil)
            #expect(message["data"]?["hapi_v"] == "1")
            let envelope = try #require(message["data"]?["hapi_e"]?.stringValue)
            #expect(try ReceivedPush.decode(version: "1", envelope: envelope, key: phoneKey) == payload)
        }
        // The relay logged four pushes, by hash only.
        relay.signal(SIGTERM)
        #expect(await relay.exitStatus() == 0)
        let lines = relay.stdout.split(separator: "\n").filter { $0.hasPrefix("push ") }
        #expect(lines.count == 4)
        #expect(!relay.stdout.contains(phoneToken))
        #expect(!relay.stdout.contains(iosToken.lowercased()))
    }

    @Test func aDeadTokenAtAPNsIsPrunedByTheHub() async throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        providers.apns.respond { _ in .text(status: 410, #"{"reason":"Unregistered","timestamp":1}"#) }
        let configuration = try PushRelayConfiguration(environment: relayEnvironment(providers))
        let server = try PushRelayServer(configuration: configuration, log: { _ in })
        let directory = providers.directory + "/hub"
        var environment = providers.environment(iosMode: "relay", androidMode: "off", dataDirectory: directory)
        environment["HAPI_PUSH_RELAY_URL"] = server.url
        let push = try NativePush(
            configuration: try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: false), store: InMemoryPushDeviceStore())
        let key = try PushKey.generate()
        let body = JSONValue.object(["platform": "ios", "deviceId": "iphone", "token": .string(String(repeating: "ab", count: 32)), "pushKey": .string(key.base64)])
        _ = await push.register(namespace: "ns", body: body.canonicalBytes)
        let report = try await push.dispatch(PushNotificationComposer.ready(for: PushSession(id: "s", metadata: ["flavor": "claude"]), messages: []), namespace: "ns")
        let devices = try await push.registry.store.devices(namespace: "ns", platforms: nil)
        await push.shutdown()
        await server.stop()
        #expect(report.deliveries.first?.outcome == .invalid)
        #expect(report.deliveries.first?.pruned == true)
        #expect(devices.isEmpty)
    }
}
