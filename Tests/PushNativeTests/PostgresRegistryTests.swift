import Foundation
import PushLoopbackServer
import PushTestSupport
import Testing

import PushTransports
import DeviceRegistry
import PushEnvelope
@testable import PushNative

/// A hub pointed at PostgreSQL with `HAPI_PUSH_DATABASE_URL`: selection, redaction, and a
/// dispatch across a server restart.
@Suite struct PostgresRegistryTests {
    @Test func theDatabaseURLSelectsPostgresAndItsPasswordIsNeverShownOrSaved() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-pgcfg-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let secret = "pa55-\(UUID().uuidString.prefix(8))"
        let url = "postgresql://hub:\(secret)@db.example.test:5432/hapi?sslmode=require"
        let configuration = try PushConfiguration.load(
            environment: ["HOME": directory, "HAPI_HOME": directory, "HAPI_PUSH_DATABASE_URL": url], dataDirectory: directory)
        let store = configuration.registry
        #expect(store.name == "postgres", "expected the PostgreSQL registry, got \(configuration.registry)")
        #expect(store.location == "postgresql://hub:***@db.example.test:5432/hapi?sslmode=require")
        #expect(configuration.settings["pushDatabaseUrl"]?.value == url)  // the real value, for connecting
        for shown in [configuration.description, configuration.jsonValue.canonicalString, "\(configuration.registry)"] {
            #expect(!shown.contains(secret), "\(shown)")
        }
        #expect(configuration.jsonValue["registry"] == ["store": "postgres", "location": .string(store.location)])
        #expect(configuration.jsonValue["settings"]?["pushDatabaseUrl"]?["value"] == .string(store.location))
        let saved = (try? String(contentsOfFile: directory + "/settings.json", encoding: .utf8)) ?? ""
        #expect(!saved.contains(secret) && !saved.contains("pushDatabaseUrl"))
        #expect(configuration.diagnostics.contains { $0.setting == "pushDatabaseUrl" && $0.level == .info })

        // Without a password it is saved on first sight like any other setting.
        let plain = try PushConfiguration.load(
            environment: ["HOME": directory, "HAPI_HOME": directory, "HAPI_PUSH_DATABASE_URL": "postgres://hub@db.example.test/hapi"],
            dataDirectory: directory)
        #expect(plain.persistedKeys.contains("pushDatabaseUrl"))
    }

    @Test func anInvalidDatabaseURLIsAnErrorNeverAFallbackToSQLite() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-pgbad-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let environment = ["HOME": directory, "HAPI_HOME": directory, "HAPI_PUSH_DATABASE_URL": "mysql://hub:secret-9@db/hapi"]
        let configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: false)
        #expect(configuration.registry.name == "none")
        #expect(configuration.diagnostics.contains { $0.level == .error && $0.setting == "pushDatabaseUrl" && !$0.message.contains("secret-9") })
        await #expect(throws: PushDeviceStoreError.invalidDatabaseURL) {
            _ = try await NativePush.start(environment: environment, dataDirectory: directory, persistSettings: false)
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/" + SQLitePushDeviceStore.defaultFileName))
    }

    /// Issue 20, item 8: a hub built without the `PostgreSQL` trait (no libpq) that is given
    /// `HAPI_PUSH_DATABASE_URL` says so and opens no registry: never SQLite in its place, never
    /// the password shown or saved. (`postgres: false` is what such a build passes.)
    @Test func aBuildWithoutThePostgreSQLTraitRefusesTheDatabaseURL() async throws {
        #expect(PushConfiguration.includesPostgres)  // this package's own build has the trait
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-nopg-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let secret = "pa55-\(UUID().uuidString.prefix(8))"
        let environment = ["HOME": directory, "HAPI_HOME": directory, "HAPI_PUSH_DATABASE_URL": "postgresql://hub:\(secret)@db.example.test/hapi"]
        let configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: true, postgres: false)
        #expect(configuration.registry.name == "none")
        let error = configuration.diagnostics.first { $0.level == .error && $0.setting == "pushDatabaseUrl" }
        #expect(error?.message.contains("no PostgreSQL registry (the package trait PostgreSQL is off)") == true, "\(configuration.diagnostics)")
        #expect(error?.message.contains("postgresql://hub:***@db.example.test/hapi") == true)
        for shown in [configuration.description, configuration.jsonValue.canonicalString] { #expect(!shown.contains(secret), "\(shown)") }
        await #expect(throws: PushDeviceStoreError.postgresNotBuilt) { _ = try await configuration.registry.open() }
        let saved = (try? String(contentsOfFile: directory + "/settings.json", encoding: .utf8)) ?? ""
        #expect(!saved.contains(secret))
        #expect(!FileManager.default.fileExists(atPath: directory + "/" + SQLitePushDeviceStore.defaultFileName))
        // Unset, the same build uses SQLite in the data directory.
        let sqlite = try PushConfiguration.load(environment: ["HOME": directory, "HAPI_HOME": directory], dataDirectory: directory, persist: false, postgres: false)
        #expect(sqlite.registry.name == "sqlite")
    }

    @Test func nativePushStartsOnPostgresAndADispatchSurvivesARestartInTheMiddle() async throws {
        let server = try await PostgresTestServer.start()
        defer { server.stop() }
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let directory = providers.directory + "/hub"
        var environment = providers.environment(iosMode: "relay", androidMode: "off", dataDirectory: directory)
        environment["HAPI_PUSH_DATABASE_URL"] = server.url
        let push = try await NativePush.start(environment: environment, dataDirectory: directory, persistSettings: false)
        #expect(push.registry.store is PostgresPushDeviceStore)
        let key = try PushKey.generate()
        let dead = String(repeating: "de", count: 32)
        for (index, token) in [String(repeating: "a1", count: 32), String(repeating: "b2", count: 32), dead].enumerated() {
            let body = #"{"token":"\#(token)","platform":"ios","deviceId":"iphone-\#(index)","pushKey":"\#(key.base64)"}"#
            #expect(await push.register(namespace: "ns", body: Array(body.utf8)) == .ok)
        }
        // The relay answers slowly, and says one token is dead (so the dispatch must prune it,
        // after the restart, on a connection the server dropped).
        providers.relay.respond { request in
            let gone = request.bodyString.contains(dead)
            return (gone ? LoopbackServer.Response.text(status: 410, #"{"ok":false,"code":"unregistered"}"#) : .json(#"{"ok":true}"#))
                .delayed(milliseconds: 1500)
        }
        let payload = PushNotificationComposer.ready(for: PushSession(id: "s-1", metadata: ["flavor": "claude", "name": "hapi"]), messages: [])
        let dispatch = Task { try await push.dispatch(payload, namespace: "ns") }
        while providers.relay.requests.count < 3 { try await Task.sleep(for: .milliseconds(10)) }
        try await server.restartAsync(mode: "immediate")
        let report = try await dispatch.value
        #expect(report.count(.sent) == 2)
        let pruned = report.deliveries.first { $0.deviceId == "iphone-2" }
        #expect(pruned?.outcome == .invalid && pruned?.pruned == true, "\(String(describing: pruned))")
        // The store recovered: the next dispatch reads the two live devices.
        providers.relay.respond { _ in .json(#"{"ok":true}"#) }
        let next = try await push.dispatch(payload, namespace: "ns")
        #expect(next.deliveries.map(\.deviceId).sorted() == ["iphone-0", "iphone-1"])
        await push.shutdown()
    }
}
