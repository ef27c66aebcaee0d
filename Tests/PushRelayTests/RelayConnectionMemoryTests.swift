import PushEnvelope
import PushHTTP
import PushLoopbackServer
import PushTestSupport
import Testing

@testable import PushRelay

/// libmicrohttpd's memory per connection (`RELAY_CONNECTION_MEMORY_BYTES`): small enough that an
/// idle kept-alive connection is cheap, large enough for every request a hub sends.
@Suite struct RelayConnectionMemoryTests {
    /// The headers a hub's HTTP client sends (Bun's `fetch`, as the official hub uses), with
    /// a long bearer token a proxy in front of the relay might add.
    static let hubHeaders: HTTPHeaders = [
        "content-type": "application/json",
        "user-agent": "Bun/1.4.4",
        "accept": "*/*",
        "accept-encoding": "gzip, deflate, br, zstd",
        "connection": "keep-alive",
        "authorization": "Bearer " + String(repeating: "eyJhbGciOiJFUzI1NiJ9", count: 25),
        "x-forwarded-for": "203.0.113.7, 198.51.100.1",
        "x-request-id": "0f8fad5b-d9cb-469f-a165-70867728950e",
    ]

    @Test func theDefaultIsFourKiBAndTheVariableSetsIt() throws {
        #expect(PushRelayConfiguration.Server().connectionMemoryLimitBytes == 4096)
        #expect(PushRelayConfiguration.Server(connectionMemoryLimitBytes: 100).connectionMemoryLimitBytes == 2048)
        #expect(PushRelayConfiguration.environmentVariables.contains("RELAY_CONNECTION_MEMORY_BYTES"))
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let environment = relayEnvironment(providers)
        #expect(try PushRelayConfiguration(environment: environment).server.connectionMemoryLimitBytes == 4096)
        let set = environment.merging(["RELAY_CONNECTION_MEMORY_BYTES": "16384"]) { $1 }
        #expect(try PushRelayConfiguration(environment: set).server.connectionMemoryLimitBytes == 16384)
        for bad in ["0", "2047", "1048577", "4k", "-1"] {
            #expect(throws: PushRelayStartupError.self, "\(bad)") {
                try PushRelayConfiguration(environment: environment.merging(["RELAY_CONNECTION_MEMORY_BYTES": bad]) { $1 })
            }
        }
    }

    /// Pushes with the largest envelope the contract allows and a hub's headers, several on one
    /// kept-alive connection (libmicrohttpd resets its memory between them).
    @Test func theDefaultServesHubRequestsWithTheLargestEnvelope() async throws {
        let relay = try RelayFixture()
        let envelope = Base64.encode([UInt8](repeating: 0xA5, count: 2400))
        #expect(envelope.utf8.count == RelayPush.maximumEnvelopeBytes)
        var statuses: [Int] = []
        for index in 0..<5 {
            let body = iosPush(token: iosToken(index), envelope: envelope).canonicalString
            let response = try await relay.push(body, headers: Self.hubHeaders)
            statuses.append(response.status)
        }
        // A whole request in one write, as a proxy forwards it.
        let raw = RawHTTP.request(
            "POST", "/v1/push", headers: Self.hubHeaders.map { "\($0.name): \($0.value)" },
            body: androidPush(envelope: envelope).canonicalString)
        let once = await RawHTTP.exchange(port: relay.server.port, raw, detectClose: true)
        await relay.stop()
        #expect(statuses == [200, 200, 200, 200, 200])
        #expect(once?.status == 200)
        #expect(once?.closed == false)
        #expect(relay.apnsRequests.count == 5)
        #expect(relay.apnsRequests.allSatisfy { String(decoding: $0.body, as: UTF8.self).contains(envelope) })
        #expect(relay.fcmSends.count == 1)
    }

    /// What the default promises: a head of 30 fields (1,085 bytes) or of one 3,000-byte field
    /// is served; a 6,000-byte head gets a prompt 431 and a closed connection, never a hang.
    @Test func theDefaultsHeadLimitsHold() async throws {
        let relay = try RelayFixture()
        let port = relay.server.port
        let push = iosPush().canonicalString
        let fields = ["Content-Type: application/json"] + (1..<30).map { "X-H\(hex2($0))0: " + String(repeating: "v", count: 24) }
        let many = RawHTTP.request("POST", "/v1/push", headers: fields, body: push)
        let manyAnswer = await RawHTTP.exchange(port: port, many, timeoutSeconds: 5)
        let long = RawHTTP.request(
            "POST", "/v1/push", headers: ["Content-Type: application/json", "X-Padding: " + String(repeating: "p", count: 3_000)], body: push)
        let longAnswer = await RawHTTP.exchange(port: port, long, timeoutSeconds: 5)
        let clock = ContinuousClock()
        let start = clock.now
        let large = RawHTTP.request(
            "POST", "/v1/push", headers: ["Content-Type: application/json", "X-Padding: " + String(repeating: "p", count: 6_000)], body: push)
        let refused = await RawHTTP.exchange(port: port, large, timeoutSeconds: 5, detectClose: true)
        let elapsed = clock.now - start
        let after = try await relay.push(iosPush(token: iosToken(3)))
        await relay.stop()
        #expect(many.utf8.count - push.utf8.count > 1_000)
        #expect(manyAnswer?.status == 200)
        #expect(longAnswer?.status == 200)
        #expect(refused?.status == 431, "\(String(describing: refused?.status))")
        #expect(refused?.closed == true)
        #expect(elapsed < .seconds(3))
        #expect(after.status == 200)
        #expect(relay.apnsRequests.count == 3)
    }
}
