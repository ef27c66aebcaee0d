import DeviceRegistryPostgres
import Foundation
import PushEnvelope
import PushTestSupport

@testable import DeviceRegistry

/// A fresh temporary directory, removed when the value is released.
final class TemporaryDirectory: @unchecked Sendable {
    let path: String

    init() {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-registry-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        path = base.path
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// The stores every behavioural test runs against.
enum StoreKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case sqlite, postgres, memory
    var testDescription: String { rawValue }

    func make(_ directory: TemporaryDirectory) async throws -> any PushDeviceStore {
        switch self {
        case .sqlite: return try await SQLitePushDeviceStore.open(directory: directory.path)
        case .postgres: return try await PostgresPushDeviceStore.open(configuration: try freshPostgresTable())
        case .memory: return InMemoryPushDeviceStore()
        }
    }
}

/// A table of its own on the process's shared PostgreSQL server (one server for every suite;
/// a test that cannot start it fails with the reason).
func freshPostgresTable(maximumConnections: Int = 4) throws -> PostgresPushDeviceStore.Configuration {
    let server = try PostgresTestServer.shared()
    return try PostgresPushDeviceStore.Configuration(
        url: server.url, tableName: "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased(),
        maximumConnections: maximumConnections)
}

import Testing

let keyA = Base64.encode([UInt8](repeating: 0xA1, count: 32))
let keyB = Base64.encode([UInt8](repeating: 0xB2, count: 32))
let iosToken = String(repeating: "ab", count: 32)

func request(
    _ namespace: String = "ns", platform: String = "phone", deviceId: String = "dev-1", token: String = "fcm-token-1",
    key: String? = nil
) throws -> PushRegistrationRequest {
    try PushRegistrationRequest(namespace: namespace, platform: platform, deviceId: deviceId, token: token, pushKey: key)
}

/// Locates an executable built beside the test bundle.
func builtExecutable(_ name: String) -> String {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    while directory.pathExtension == "xctest" || directory.lastPathComponent == "MacOS" {
        directory = directory.deletingLastPathComponent()
    }
    return directory.appendingPathComponent(name).path
}
