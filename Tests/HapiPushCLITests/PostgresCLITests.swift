import Foundation
import PushTestSupport
import Testing

/// `hapi-push` with `HAPI_PUSH_DATABASE_URL`: the devices commands use PostgreSQL, `config`
/// shows the registry with the password redacted, and the password appears nowhere.
@Suite struct PostgresCLITests {
    @Test func devicesAndConfigUseThePostgresRegistryWithoutShowingThePassword() async throws {
        let server = try PostgresTestServer.shared()
        let database = "cli_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        try await server.psqlAsync("CREATE DATABASE \(database)")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-cli-pg-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var environment = ProcessInfo.processInfo.environment
        environment["HAPI_PUSH_DATABASE_URL"] = server.url(database: database)
        environment["HAPI_HOME"] = dir

        let registered = try CLI.run(
            ["--data-dir", dir, "devices", "register", "--namespace", "ns", "--platform", "phone", "--device-id", "pixel", "--token", "fcm:tok"],
            environment: environment)
        #expect(registered.status == 0, "\(registered.stderr)")
        let list = try CLI.run(["--data-dir", dir, "devices", "list", "--namespace", "ns", "--json"], environment: environment)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("\"deviceId\":\"pixel\""))
        // The row is in PostgreSQL, not in an SQLite file.
        #expect(try await server.psqlAsync("SELECT device_id FROM fcm_devices", database: database).contains("pixel"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/native-push.sqlite3"))

        let config = try CLI.run(["--data-dir", dir, "config", "--json"], environment: environment)
        #expect(config.status == 0)
        #expect(config.stdout.contains(#""registry":{"location":"postgresql://hapi:***@127.0.0.1:\#(server.port)/\#(database)","store":"postgres"}"#))
        let text = try CLI.run(["--data-dir", dir, "config"], environment: environment)
        #expect(text.stdout.contains("Registry:              postgres"))
        let unregistered = try CLI.run(["--data-dir", dir, "devices", "unregister", "--namespace", "ns", "--token", "fcm:tok"], environment: environment)
        #expect(unregistered.stdout.contains("unregistered"))
        for output in [registered, list, config, text, unregistered].flatMap({ [$0.stdout, $0.stderr] }) {
            #expect(!output.contains(server.password))
        }
        let saved = (try? String(contentsOfFile: dir + "/settings.json", encoding: .utf8)) ?? ""
        #expect(!saved.contains(server.password))

        // An unreachable server: exit 1 with a message naming it, not the password.
        environment["HAPI_PUSH_DATABASE_URL"] = "postgresql://hapi:\(server.password)@127.0.0.1:\(try TestServerFiles.freePort())/none?connect_timeout=2"
        let down = try CLI.run(["--data-dir", dir, "devices", "list", "--namespace", "ns"], environment: environment)
        #expect(down.status == 1)
        #expect(down.stderr.contains("127.0.0.1") && !down.stderr.contains(server.password), "\(down.stderr)")
    }
}
