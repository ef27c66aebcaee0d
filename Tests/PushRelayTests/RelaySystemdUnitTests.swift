import Foundation
import Testing

/// deploy/hapi-push-relay.service checked by `systemd-analyze verify` in a scratch root that
/// holds the unit, the built relay at the unit's ExecStart path, and the system's own units
/// (for the default dependencies): any complaint fails the test.
@Suite struct RelaySystemdUnitTests {
    static let analyze = "/usr/bin/systemd-analyze"

    /// `systemd-analyze verify` of `unit` (text) in a scratch root; its output (empty when clean).
    static func verify(_ unit: String) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-unit-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let manager = FileManager.default
        for directory in ["/usr/local/bin", "/etc/systemd/system", "/usr/lib/systemd"] {
            try manager.createDirectory(atPath: root + directory, withIntermediateDirectories: true)
        }
        try manager.copyItem(atPath: "/usr/lib/systemd/system", toPath: root + "/usr/lib/systemd/system")
        try manager.copyItem(atPath: RelayProcess.executable.path, toPath: root + "/usr/local/bin/hapi-push-relay")
        let path = root + "/etc/systemd/system/hapi-push-relay.service"
        try unit.write(toFile: path, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: analyze)
        process.arguments = ["verify", "--root=\(root)", path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        return process.terminationStatus == 0 ? text : "exit \(process.terminationStatus): " + text
    }

    @Test func theUnitVerifiesClean() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.analyze), "systemd-analyze is missing: make test installs systemd")
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let unit = try String(contentsOf: source.appendingPathComponent("deploy/hapi-push-relay.service"), encoding: .utf8)
        let report = try Self.verify(unit)
        #expect(report.isEmpty, "systemd-analyze verify: \(report)")
        // The check bites: a misspelt setting is reported.
        let broken = try Self.verify(unit.replacingOccurrences(of: "ProtectSystem=strict", with: "ProtectSystem=stricter"))
        #expect(broken.contains("ProtectSystem") || broken.contains("protect system"), "\(broken)")
    }
}
