import Foundation
import PushTestSupport
import Testing

import DeviceRegistry
import PushEnvelope
import PushHTTP
@testable import PushNative

/// Issue 12, item 4: `NativePush.Configuration` holds what `NativePush.init` used to hard-code
/// or take loosely, with the same defaults, and refuses a value that cannot work before
/// anything is opened, with the HTTP client's own check.
@Suite struct RuntimeConfigurationTests {
    @Test func defaultsAreTheLimitsThatWereHardCoded() {
        let runtime = NativePush.Configuration()
        #expect(runtime.timeouts.request == .seconds(10))
        #expect(runtime.timeouts.connect == .seconds(5))
        #expect(runtime.connections.maximumPerHost == 4)
        #expect(runtime.connections.maximumConcurrentStreams == 1000)
        #expect(runtime.concurrency.relay == 64 && runtime.concurrency.apns == 256 && runtime.concurrency.fcm == 64 && runtime.concurrency.webPush == 64)
        #expect(runtime.retry.maximumAttempts == 1)
        #expect(runtime.dispatchWindow == 2048)
        #expect(throws: Never.self) { try runtime.validate() }
        let client = runtime.httpClientConfiguration(caFile: "/ca.pem")
        #expect(client.requestTimeout == .seconds(10) && client.maximumConnectionsPerHost == 4 && client.additionalTrustedCAFile == "/ca.pem")
    }

    @Test(arguments: [
        (NativePush.Configuration(timeouts: .init(request: .zero)), "requestTimeout"),
        (NativePush.Configuration(timeouts: .init(connect: .seconds(-1))), "connectTimeout"),
        (NativePush.Configuration(connections: .init(maximumConcurrentStreams: 0)), "maximumConcurrentStreamsPerConnection"),
        (NativePush.Configuration(connections: .init(maximumPerHost: -1)), "connection limits"),
        (NativePush.Configuration(concurrency: .init(fcm: 0)), "concurrency.fcm"),
        (NativePush.Configuration(concurrency: .init(webPush: 0)), "concurrency.webPush"),
        (NativePush.Configuration(dispatchWindow: 0), "dispatchWindow"),
        (NativePush.Configuration(retry: PushRetryPolicy(maximumAttempts: 3, initialBackoff: .seconds(-1))), "retry"),
    ])
    func aValueThatCannotWorkIsRefusedByName(_ runtime: NativePush.Configuration, _ named: String) async throws {
        let error = try #require(throws: NativePushError.self) { try runtime.validate() }
        #expect(error.message.contains(named), "\(error)")

        // NativePush.start checks it before reading settings or opening the registry.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-runtime-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        await #expect(throws: NativePushError.self) {
            _ = try await NativePush.start(environment: ["HAPI_HOME": directory], dataDirectory: directory, runtime: runtime)
        }
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    /// The smallest window and concurrency still reach every device, each exactly once.
    @Test func aSmallWindowAndConcurrencyStillReachEveryDevice() async throws {
        let providers = try LoopbackProviders()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-runtime-\(UUID().uuidString)").path
        defer {
            providers.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let configuration = try PushConfiguration.load(
            environment: providers.environment(iosMode: "relay", androidMode: "relay", dataDirectory: directory), dataDirectory: directory)
        let runtime = NativePush.Configuration(concurrency: .init(relay: 1), dispatchWindow: 1)
        let push = try NativePush(configuration: configuration, store: InMemoryPushDeviceStore(), runtime: runtime)
        let key = try PushKey.generate()
        for index in 0..<5 {
            try await push.registry.register(
                try PushRegistrationRequest(namespace: "ns", platform: "phone", deviceId: "p\(index)", token: "fcm-\(index)", pushKey: key.base64))
        }
        let report = try await push.dispatch(readyPayload, namespace: "ns")
        await push.shutdown()
        #expect(report.count(.sent) == 5)
        #expect(providers.relay.requests.count == 5)
        #expect(push.runtime.dispatchWindow == 1)
    }

    /// Web Push has a concurrency of its own; it no longer borrows the relay's.
    @Test func webPushTakesItsOwnConcurrency() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-runtime-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let runtime = NativePush.Configuration(concurrency: .init(relay: 3, webPush: 7))
        let push = try await NativePush.start(environment: ["HAPI_HOME": directory], dataDirectory: directory, runtime: runtime)
        let transport = try #require(push.webPushChannel.transport, "\(push.webPushOffReason ?? "")")
        #expect(transport.concurrency == 7)
        await push.shutdown()
    }
}
