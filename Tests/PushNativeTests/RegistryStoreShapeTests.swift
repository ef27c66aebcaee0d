import DeviceRegistry
import Foundation
import Testing

@testable import PushNative

/// Issue 27 item 4 (store selection): `PushConfiguration.registry` is a `PushDeviceStoreFactory`,
/// one struct in every build; the PostgreSQL registry's factory comes from the
/// DeviceRegistryPostgres product, so a package in the graph turning the trait on changes no
/// public type a hub names.
@Suite struct RegistryStoreShapeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The library products that exist whether or not the trait is on.
    static let modulesWithoutTrait = ["PushCore", "PushEnvelope", "DeviceRegistry", "PushProviders", "PushTelemetry", "PushTransports", "PushRelay", "PushNative"]

    /// docs/public-api.txt is generated with the default traits (PostgreSQL on). No declaration
    /// of a module that also exists without the trait names a type that exists only with it:
    /// so the same declarations are there when the trait is off (what the trait adds is the
    /// DeviceRegistryPostgres module, and its extension `PushDeviceStoreFactory.postgres(_:)`).
    @Test func noPublicDeclarationOutsideThePostgresProductNamesItsTypes() throws {
        let list = try String(contentsOf: Self.root.appendingPathComponent("docs/public-api.txt"), encoding: .utf8)
        let offending = list.split(separator: "\n").filter { line in
            guard let module = line.split(separator: " ").first.map(String.init), Self.modulesWithoutTrait.contains(module) else { return false }
            return line.contains("PostgresPushDeviceStore")
        }
        #expect(offending.isEmpty, "\(offending.joined(separator: "\n"))")
        #expect(list.contains("PushNative  typealias  PushConfiguration.RegistryStore  typealias RegistryStore = PushDeviceStoreFactory\n"))
        #expect(list.contains("DeviceRegistryPostgres@DeviceRegistry  type.method  PushDeviceStoreFactory.postgres(_:)"))
        #expect(!list.contains("PushConfiguration.RegistryStore."))
    }

    /// The source side of the same promise: in those modules, what `#if PostgreSQL` guards is
    /// imports and statements only, never a declaration (a case, a member, a type) a hub could name.
    @Test func theTraitGuardsNoDeclarationInTheModulesAHubNames() throws {
        var offending: [String] = []
        for module in Self.modulesWithoutTrait {
            let directory = Self.root.appendingPathComponent("Sources/\(module)")
            guard let files = FileManager.default.enumerator(atPath: directory.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                offending += Self.guardedDeclarations(text).map { "Sources/\(module)/\(file): \($0)" }
            }
        }
        #expect(offending.isEmpty, "\(offending.joined(separator: "\n"))")
        // The scan sees what it must.
        let old = "public enum RegistryStore {\n    case sqlite(path: String)\n    #if PostgreSQL\n    case postgres(PostgresPushDeviceStore.Configuration)\n    #endif\n}\n"
        #expect(Self.guardedDeclarations(old) == ["case postgres(PostgresPushDeviceStore.Configuration)"])
        #expect(Self.guardedDeclarations("#if PostgreSQL\nimport DeviceRegistryPostgres\n#endif\nswitch x {\n#if PostgreSQL\ncase .postgres: f()\n#endif\n}\n").isEmpty)
    }

    /// The declarations inside `#if PostgreSQL` groups (any branch): lines that declare rather
    /// than import or run.
    static func guardedDeclarations(_ text: String) -> [String] {
        let declaring = ["public ", "open ", "package ", "struct ", "enum ", "class ", "actor ", "protocol ", "extension ", "typealias ", "func ", "init(", "static "]
        var stack: [Bool] = []
        var found: [String] = []
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#if") {
                stack.append(line.contains("PostgreSQL"))
                continue
            }
            if line.hasPrefix("#endif") {
                _ = stack.popLast()
                continue
            }
            guard stack.contains(true), !line.hasPrefix("#"), !line.hasPrefix("//") else { continue }
            let isImport = line.hasPrefix("import ") || line.hasPrefix("public import ") || line.hasPrefix("package import ")
                || line.hasPrefix("@_exported ")
            let isCaseDeclaration = line.hasPrefix("case ") && !line.hasPrefix("case .") && !line.hasPrefix("case let ")
            if !isImport, isCaseDeclaration || declaring.contains(where: { line.hasPrefix($0) }) { found.append(line) }
        }
        return found
    }

    /// A hub's own store goes through the same type; the built-in ones say what they are.
    @Test func aFactoryOpensItsStoreAndTheBuiltInOnesSayWhatTheyAre() async throws {
        let store = InMemoryPushDeviceStore()
        let factory = PushDeviceStoreFactory(name: "hub", location: "in memory") { () async throws(PushDeviceStoreError) -> any PushDeviceStore in store }
        #expect(try await factory.open() as? InMemoryPushDeviceStore === store)
        #expect("\(factory)" == "hub in memory")
        #expect(PushDeviceStoreFactory.sqlite(path: "/data/native-push.sqlite3").description == "sqlite /data/native-push.sqlite3")
        let unusable = PushConfiguration.RegistryStore.unusable(PushDeviceStoreError.postgresNotBuilt.with("no PostgreSQL here"))
        #expect(unusable.name == "none" && unusable.location == "no PostgreSQL here")
        await #expect(throws: PushDeviceStoreError.postgresNotBuilt) { _ = try await unusable.open() }
    }
}
