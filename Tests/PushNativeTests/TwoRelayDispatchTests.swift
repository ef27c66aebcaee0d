import Foundation
import PushHTTP
import PushLoopbackServer
import PushTestSupport
import Testing

import DeviceRegistry
import PushEnvelope
import PushTransports
@testable import PushNative

/// Issue 12, item 7: a dispatcher with two relays of different URLs (one for iPhones, one for
/// Android phones) sends each platform's pushes to its own relay. Grouping by transport name
/// ("relay" for both) once sent every push to the first.
@Suite struct TwoRelayDispatchTests {
    @Test func eachRelayReceivesOnlyItsOwnPlatformsPushes() async throws {
        let iosRelay = try RecordingServer()
        let androidRelay = try RecordingServer()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-two-relays-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer {
            iosRelay.stop()
            androidRelay.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        var bundle = ""
        for server in [iosRelay, androidRelay] {
            let path = try #require(server.caFile)
            bundle += try String(contentsOfFile: path, encoding: .utf8)
        }
        let caPath = directory + "/two-relays-ca.pem"
        try Data(bundle.utf8).write(to: URL(fileURLWithPath: caPath))
        let client = try HTTPClient(configuration: .init(requestTimeout: .seconds(5), additionalTrustedCAFile: caPath))

        let store = InMemoryPushDeviceStore()
        let registry = PushDeviceRegistry(store: store)
        let iosKey = try PushKey.generate()
        let phoneKey = try PushKey.generate()
        for (platform, id, token, key) in [
            ("ios", "iphone-1", String(repeating: "ab", count: 32), iosKey), ("ios", "iphone-2", String(repeating: "cd", count: 32), iosKey),
            ("phone", "pixel-1", "fcm-phone-1", phoneKey), ("phone", "pixel-2", "fcm-phone-2", phoneKey),
        ] {
            try await registry.register(try PushRegistrationRequest(namespace: "ns", platform: platform, deviceId: id, token: token, pushKey: key.base64))
        }
        let dispatcher = PushDispatcher(
            store: store, ios: .encrypted(RelayTransport(baseURL: iosRelay.baseURL, client: client)),
            android: .encrypted(RelayTransport(baseURL: androidRelay.baseURL, client: client)))

        let report = try await dispatcher.dispatch(readyPayload, namespace: "ns")
        await client.shutdown()

        #expect(report.count(.sent) == 4)
        let iosPlatforms = try iosRelay.requests.map { try JSONParser.parse($0.body)["platform"]?.stringValue }
        let androidPlatforms = try androidRelay.requests.map { try JSONParser.parse($0.body)["platform"]?.stringValue }
        #expect(iosPlatforms == ["ios", "ios"])
        #expect(androidPlatforms == ["android", "android"])
        for request in iosRelay.requests {
            let envelope = try #require(try JSONParser.parse(request.body)["envelope"]?.stringValue)
            #expect(try ReceivedPush.decode(version: "1", envelope: envelope, key: iosKey) == readyPayload)
        }
    }
}
