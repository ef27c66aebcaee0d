import Foundation
import Testing

/// `scripts/check-platform-sources.sh` (the first step of `make test`) passes on this checkout
/// and fails on a copy of it with one planted offence of each kind, so the check can fail.
/// The offences are spelt in pieces here, or this file would be one.
@Suite struct PlatformSourceCheckTests {
    /// The package root, from this file's path.
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private static let linuxOnly = "ep" + "oll"
    /// The platform layer's Linux backend file.
    private static let linuxBackend = "Sources/PushPlatform/SelectorEp" + "oll.swift"

    /// Runs the script on `root`; its exit status and what it printed.
    private static func check(_ root: URL) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [Self.root.appendingPathComponent("scripts/check-platform-sources.sh").path, root.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A copy of `Sources` and `Tests` in a temporary directory, with `plant` applied to it.
    private static func plantedCopy(_ plant: (URL) throws -> Void) throws -> URL {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-platform-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        for folder in ["Sources", "Tests"] {
            try FileManager.default.copyItem(at: root.appendingPathComponent(folder), to: copy.appendingPathComponent(folder))
        }
        try plant(copy)
        return copy
    }

    private static func append(_ text: String, to path: String, in copy: URL) throws {
        let url = copy.appendingPathComponent(path)
        let before = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        try (before + text).write(to: url, atomically: true, encoding: .utf8)
    }

    @Test func passesOnThisCheckout() throws {
        let result = try Self.check(Self.root)
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func failsOnAnUnguardedPlatformImport() throws {
        for module in ["Glibc", "Musl", "Darwin"] {
            let copy = try Self.plantedCopy { try Self.append("import " + module + "\n", to: "Sources/PushCore/Planted.swift", in: $0) }
            defer { try? FileManager.default.removeItem(at: copy) }
            let result = try Self.check(copy)
            #expect(result.status == 1)
            #expect(result.output.contains("Sources/PushCore/Planted.swift:1: import \(module) outside #if canImport(\(module))"), "\(result.output)")
        }
    }

    @Test func failsOnAnImportGuardedByTheWrongModule() throws {
        let planted = "#if canImport(Darwin)\nimport Glibc\n#endif\n"
        let copy = try Self.plantedCopy { try Self.append(planted, to: "Tests/PushSyncTests/Planted.swift", in: $0) }
        defer { try? FileManager.default.removeItem(at: copy) }
        let result = try Self.check(copy)
        #expect(result.status == 1)
        #expect(result.output.contains("Tests/PushSyncTests/Planted.swift:2: import Glibc outside"), "\(result.output)")
    }

    @Test func failsOnAPlatformNameOutsideThePlatformLayer() throws {
        for (path, text) in [
            ("Sources/PushSync/Planted.swift", "let planted = \(Self.linuxOnly)_create1(0)\n"),
            ("Sources/CHapiOpenSSL/planted.h", "#include <sys/\(Self.linuxOnly).h>\n"),
            ("Sources/CHapiOpenSSL/planted2.h", "#include <mall" + "oc.h>\n"),
            ("Sources/PushSync/Planted.swift", "let planted = mall" + "opt(1, 1)\n"),
            ("Sources/PushHTTP/Planted.swift", "let planted = send(0, nil, 0, Int32(MSG_" + "NOSIGNAL))\n"),
            ("Sources/PushRelay/Planted.swift", "let planted = Int32(SOCK_" + "CLOEXEC.rawValue)\n"),
            ("Sources/PushRelay/Planted.swift", "let planted = Int32(SOCK_" + "NONBLOCK.rawValue)\n"),
            ("Sources/CHapiMicrohttpd/planted.h", "int planted = TCP_" + "INFO;\n"),
            ("Sources/PushSync/Planted.swift", "let planted = SO_" + "NOSIGPIPE\n"),
            ("Sources/PushSync/Planted.swift", "let planted = TCP_" + "CONNECTION_INFO\n"),
            ("Sources/PushSync/Planted.swift", "let planted = pthread_" + "setname_np(\"x\")\n"),
            ("Tests/PushSyncTests/Planted.swift", "let planted = get" + "rlimit(0, nil)\n"),
        ] {
            let copy = try Self.plantedCopy { try Self.append(text, to: path, in: $0) }
            defer { try? FileManager.default.removeItem(at: copy) }
            let result = try Self.check(copy)
            #expect(result.status == 1, "\(text)")
            #expect(result.output.contains("outside the platform layer: \(path):1:"), "\(result.output)")
        }
        // In a comment, or in the platform layer itself: accepted.
        let accepted = try Self.plantedCopy { copy in
            try Self.append("// MSG_" + "NOSIGNAL, SOCK_" + "CLOEXEC\n", to: "Sources/PushSync/Planted.swift", in: copy)
            try Self.append("let planted = Int32(MSG_" + "NOSIGNAL)\n", to: "Sources/PushPlatform/Planted.swift", in: copy)
        }
        defer { try? FileManager.default.removeItem(at: accepted) }
        let result = try Self.check(accepted)
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func failsOnANameQualifiedWithOneCLibrary() throws {
        for module in ["Glibc", "Musl", "Darwin"] {
            let copy = try Self.plantedCopy { try Self.append("func planted() { _ = " + module + ".close(0) }\n", to: "Sources/PushHTTP/Planted.swift", in: $0) }
            defer { try? FileManager.default.removeItem(at: copy) }
            let result = try Self.check(copy)
            #expect(result.status == 1)
            #expect(result.output.contains("qualified with one C library outside the platform layer: Sources/PushHTTP/Planted.swift:1:"), "\(result.output)")
        }
    }

    @Test func failsOnALinuxBackendWithoutItsPortableCounterpart() throws {
        // With SelectorPoll.swift gone, the Linux backend's whole-file Linux branch has no other side.
        let copy = try Self.plantedCopy { try FileManager.default.removeItem(at: $0.appendingPathComponent("Sources/PushPlatform/SelectorPoll.swift")) }
        defer { try? FileManager.default.removeItem(at: copy) }
        let result = try Self.check(copy)
        #expect(result.status == 1)
        #expect(result.output.contains("\(Self.linuxBackend):1: #if os(Linux) without a portable #else"), "\(result.output)")
        // The same whole-file branch outside the platform layer is refused even with the counterpart there.
        let elsewhere = try Self.plantedCopy { copy in
            let source = copy.appendingPathComponent(Self.linuxBackend)
            try FileManager.default.copyItem(at: source, to: copy.appendingPathComponent("Sources/PushHTTP/PlantedBackend.swift"))
        }
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        let moved = try Self.check(elsewhere)
        #expect(moved.status == 1)
        #expect(moved.output.contains("Sources/PushHTTP/PlantedBackend.swift:1: #if os(Linux) without a portable #else"), "\(moved.output)")
    }

    @Test func failsOnALinuxBranchWithoutAPortableElse() throws {
        let cases = [
            // No #else: what would macOS compile?
            ("#if os(Linux) && !HAPI_PUSH_PORTABLE\nlet planted = 1\n#endif\n", "without a portable #else"),
            // An #else the portable build never takes.
            ("#if os(Linux)\nlet planted = 1\n#else\nlet planted = 2\n#endif\n", "without && !HAPI_PUSH_PORTABLE"),
        ]
        for (text, message) in cases {
            let copy = try Self.plantedCopy { try Self.append(text, to: "Sources/PushCore/Planted.swift", in: $0) }
            defer { try? FileManager.default.removeItem(at: copy) }
            let result = try Self.check(copy)
            #expect(result.status == 1)
            #expect(result.output.contains("Sources/PushCore/Planted.swift:1: #if os(Linux) \(message)"), "\(result.output)")
        }
        // Both present, or a branch of imports only: accepted.
        let accepted = "#if os(Linux) && !HAPI_PUSH_PORTABLE\nlet planted = 1\n#else\nlet planted = 2\n#endif\n#if os(Linux)\nimport Foundation\n#endif\n"
        let copy = try Self.plantedCopy { try Self.append(accepted, to: "Sources/PushCore/Planted.swift", in: $0) }
        defer { try? FileManager.default.removeItem(at: copy) }
        let result = try Self.check(copy)
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func failsWhenAnAllowListedFileIsGone() throws {
        let copy = try Self.plantedCopy { try FileManager.default.removeItem(at: $0.appendingPathComponent("Sources/CHapiMallocArena/shim.h")) }
        defer { try? FileManager.default.removeItem(at: copy) }
        let result = try Self.check(copy)
        #expect(result.status == 1)
        #expect(result.output.contains("allow-listed Sources/CHapiMallocArena/shim.h does not exist"), "\(result.output)")
    }
}
