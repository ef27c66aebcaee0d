import DeviceRegistry
import Foundation
import PushEnvelope
import PushLoopbackServer
import PushTestSupport
import Testing

/// The operator's `hapi-push send` against a server we did not write: Debian's stock nghttpd
/// standing in for APNs (it answers every POST 200). Twenty consecutive runs to the same
/// 10,000 iOS devices: every device of every run is `sent` — nothing lost under load.
@Suite(.serialized) struct StockNghttpdTests {
    @Test func twentySendsToTenThousandDevicesAreAllSent() async throws {
        let nghttpd = try StockNghttpd()
        defer { nghttpd.stop() }
        let providers = try LoopbackProviders()  // only for its throwaway APNs key and environment
        defer { providers.stop() }
        let directory = providers.directory + "/hub"
        let store: any PushDeviceStore = try SQLitePushDeviceStore(directory: directory)
        let key = try PushKey.generate().base64
        for index in 0..<10_000 {
            let token = Digest.hex(Digest.sha256(Array("nghttpd-device-\(index)".utf8)))
            _ = try await store.upsert(
                PushRegistrationRequest(namespace: "load", platform: "ios", deviceId: "d\(index)", token: token, pushKey: key), now: Int64(index))
        }
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in providers.environment(iosMode: "apns", androidMode: "off", dataDirectory: directory) {
            environment[name] = value
        }
        environment["HAPI_APNS_ENDPOINT"] = nghttpd.baseURL
        environment["HAPI_PUSH_CA_FILE"] = nghttpd.caPath
        for run in 1...20 {
            let result = try CLI.run(
                ["send", "--namespace", "load", "--type", "ready", "--session-id", "s-\(run)", "--title", "Claude is ready", "--body", "Run \(run)", "--json"],
                environment: environment)
            #expect(result.status == 0, "run \(run): \(result.stderr)")
            print("nghttpd run \(run): \(result.stdout.utf8.count) bytes of report")
            let report = try JSONParser.parse(result.stdout)
            let sent = report["totals"]?["sent"]
            #expect(sent == .integer(10_000), "run \(run): \(report["totals"].map(\.canonicalString) ?? result.stdout.prefix(300).description)")
            if sent != .integer(10_000) {
                let reasons = (report["deliveries"]?.arrayValue ?? []).compactMap { $0["reason"]?.stringValue }
                Issue.record("run \(run) reasons: \(Set(reasons).sorted().prefix(5))")
                break
            }
        }
    }
}
