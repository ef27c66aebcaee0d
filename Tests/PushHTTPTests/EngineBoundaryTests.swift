import Foundation
import Testing

/// The two engines know nothing of each other: the HTTP/2 engine hands an origin that does not
/// speak HTTP/2 back to the client, and only the client (`HTTPClient`, and the transfer that
/// remembers which engine holds it for a cancel) chooses between them. Checked on the sources,
/// so a shortcut from one engine into the other fails here instead of in review.
@Suite struct EngineBoundaryTests {
    private static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/PushHTTP")

    private static func sources() throws -> [(name: String, text: String)] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }.sorted().map {
            ($0, try String(contentsOf: directory.appendingPathComponent($0), encoding: .utf8))
        }
    }

    @Test func theHTTP2EngineNamesNothingOfLibcurlsEngine() throws {
        try Self.expect(filesStarting: "H2", atLeast: 8, nameNoneOf: ["CurlMultiLoop", "CurlEasyHandle", "curl_multi_", "curl_easy_"])
    }

    @Test func libcurlsEngineNamesNothingOfTheHTTP2Engine() throws {
        try Self.expect(filesStarting: "Curl", atLeast: 2, nameNoneOf: ["H2EventLoop", "H2Loop", "H2Connection", "nghttp2_"])
    }

    private static func expect(filesStarting prefix: String, atLeast minimum: Int, nameNoneOf words: [String]) throws {
        let files = try sources().filter { $0.name.hasPrefix(prefix) }
        try #require(files.count >= minimum, "found \(files.map(\.name))")
        for (name, text) in files {
            for word in words { #expect(!text.contains(word), "\(name) names \(word)") }
        }
    }

    @Test func onlyTheClientAndTheTransferNameBothEngines() throws {
        let both = try Self.sources().filter { $0.text.contains("CurlMultiLoop") && $0.text.contains("H2EventLoop") }.map(\.name)
        #expect(Set(both) == ["HTTPClient.swift", "HTTPTransfer.swift"])
    }
}
