import Foundation
import PushEnvelope

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
    case sqlite, memory
    var testDescription: String { rawValue }

    func make(_ directory: TemporaryDirectory) throws -> any DeviceStore {
        switch self {
        case .sqlite: return try SQLiteDeviceStore(directory: directory.path)
        case .memory: return InMemoryDeviceStore()
        }
    }
}

import Testing

let keyA = Base64.encode([UInt8](repeating: 0xA1, count: 32))
let keyB = Base64.encode([UInt8](repeating: 0xB2, count: 32))
let iosToken = String(repeating: "ab", count: 32)

func request(
    _ namespace: String = "ns", platform: String = "phone", deviceId: String = "dev-1", token: String = "fcm-token-1",
    key: String? = nil
) throws -> RegistrationRequest {
    try RegistrationRequest(namespace: namespace, platform: platform, deviceId: deviceId, token: token, pushKey: key)
}

/// Locates an executable built beside the test bundle.
func builtExecutable(_ name: String) -> String {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    while directory.pathExtension == "xctest" || directory.lastPathComponent == "MacOS" {
        directory = directory.deletingLastPathComponent()
    }
    return directory.appendingPathComponent(name).path
}
