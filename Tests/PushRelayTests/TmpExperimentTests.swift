import Foundation
import PushHTTP
import PushTestSupport
import Testing
@testable import PushRelay

@Suite struct TmpExperimentTests {
    @Test(arguments: ["copy", "copy+openssl", "openssl+copy", "copy+copy"]) func bundles(_ kind: String) async throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let original = try String(contentsOfFile: providers.caBundlePath, encoding: .utf8)
        let redis = try RedisTestServer(transport: .tls(names: "DNS:localhost"))
        let other = try String(contentsOfFile: redis.caPath!, encoding: .utf8)
        let parts = kind.split(separator: "+").map { $0 == "copy" ? original : other }
        let bundle = providers.directory + "/b.pem"
        try Data(parts.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: bundle))
        var configuration = try PushRelayConfiguration(environment: relayEnvironment(providers).merging(["RELAY_CA_FILE": bundle]) { $1 })
        configuration.port = 0
        let log = LogCapture()
        let server = try PushRelayServer(configuration: configuration, log: log.sink)
        let client = try HTTPClient()
        let answer = try await client.send(HTTPRequest(method: .post, url: server.url + "/v1/push", body: Array(iosPush().canonicalString.utf8)))
        print("KIND \(kind): \(answer.status) \(log.pushLines)")
        await client.shutdown()
        await server.stop(grace: .seconds(1))
    }
}
