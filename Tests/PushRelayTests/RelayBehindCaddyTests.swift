import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushEnvelope
import PushTestSupport
import Testing

@testable import PushRelay

/// deploy/Caddyfile (the configuration docs/relay.md shows) run with Debian's `caddy` in front of
/// the relay on loopback, TLS with a CA this test makes: a push through it is limited by the
/// address the client connected from, whatever `X-Forwarded-For` the client sends.
@Suite struct RelayBehindCaddyTests {
    /// Runs a tool to its end; its output, or a thrown reason naming it.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String], environment: [String: String]? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw CaddyTestError("\(tool) \(arguments.first ?? "") failed (\(process.terminationStatus)): \(text.prefix(600))")
        }
        return text
    }

    struct CaddyTestError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// A free TCP port on 127.0.0.1 (bound, read, released).
    static func freePort() -> Int {
        let fd = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false, closeOnExec: false)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length)
                return getsockname(fd, pointer, &length)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func aPushThroughCaddyIsLimitedByTheClientsAddressNotItsHeader() async throws {
        let caddy = "/usr/bin/caddy"
        let openssl = "/usr/bin/openssl"
        let curl = "/usr/bin/curl"
        for tool in [caddy, openssl, curl] {
            #expect(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: make test installs caddy, openssl and curl")
        }
        // One push per client address a minute: the second push from an address is refused
        // whatever it claims in X-Forwarded-For; another address has its own budget.
        let relay = try RelayFixture { configuration in
            configuration.trustProxy = true
            configuration.clientLimit = PushRelayRateLimit(burst: 1, perMinute: 1)
        }
        let directory = relay.providers.directory + "/caddy"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The test CA and the site's certificate (for 127.0.0.1: the client connects by address).
        try Self.run(openssl, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=hapi relay test CA", "-keyout", directory + "/ca.key", "-out", directory + "/ca.pem",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
        try Self.run(openssl, ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", directory + "/site.key", "-out", directory + "/site.csr"])
        try "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n".write(toFile: directory + "/site.ext", atomically: true, encoding: .utf8)
        try Self.run(openssl, ["x509", "-req", "-in", directory + "/site.csr", "-CA", directory + "/ca.pem", "-CAkey", directory + "/ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", directory + "/site.ext", "-out", directory + "/site.pem"])

        // deploy/Caddyfile, with the site, the relay's port and the test's certificate.
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let documented = try String(contentsOf: source.appendingPathComponent("deploy/Caddyfile"), encoding: .utf8)
        #expect(documented.contains("header_up X-Forwarded-For {remote_host}"))
        let port = Self.freePort()
        let site = "https://127.0.0.1:\(port)"
        let configured = documented
            .replacingOccurrences(of: "push.example.com {", with: "\(site) {\n\ttls \(directory)/site.pem \(directory)/site.key")
            .replacingOccurrences(of: "127.0.0.1:8790", with: "127.0.0.1:\(relay.server.port)")
        // Test-only globals: no admin endpoint, no port 80 listener, state in the test's directory.
        let caddyfile = "{\n\tadmin off\n\tauto_https disable_redirects\n\tstorage file_system \(directory)/data\n}\n" + configured
        try caddyfile.write(toFile: directory + "/Caddyfile", atomically: true, encoding: .utf8)
        let environment = ["HOME": directory, "XDG_DATA_HOME": directory + "/data", "XDG_CONFIG_HOME": directory + "/config", "PATH": "/usr/bin:/bin"]
        try Self.run(caddy, ["validate", "--config", directory + "/Caddyfile", "--adapter", "caddyfile"], environment: environment)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: caddy)
        server.arguments = ["run", "--config", directory + "/Caddyfile", "--adapter", "caddyfile"]
        server.environment = environment
        let log = Pipe()
        server.standardOutput = log
        server.standardError = log
        try server.run()
        defer {
            server.terminate()
            server.waitUntilExit()
        }

        /// POSTs a push through Caddy from `source` claiming `forwardedFor`; the HTTP status.
        func push(from source: String, claiming forwardedFor: String, token: Int) throws -> Int? {
            let body = iosPush(token: iosToken(token)).canonicalString
            let output = try Self.run(curl, [
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "--cacert", directory + "/ca.pem",
                "--interface", source, "-H", "Content-Type: application/json", "-H", "X-Forwarded-For: \(forwardedFor)",
                "--data-binary", body, site + "/v1/push",
            ])
            return Int(output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        // Wait for Caddy to listen (its /health through the proxy answers).
        var ready = false
        for _ in 0..<100 {
            if let status = try? Self.run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", directory + "/ca.pem", site + "/health"]),
                status == "200"
            {
                ready = true
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        try #require(ready, "caddy did not serve \(site)")
        let first = try push(from: "127.0.0.7", claiming: "203.0.113.1", token: 1)
        let spoofed = try push(from: "127.0.0.7", claiming: "203.0.113.2", token: 2)
        let other = try push(from: "127.0.0.8", claiming: "203.0.113.2", token: 3)
        let apns = relay.apnsRequests.count
        await relay.stop()
        #expect(first == 200, "the push reached the relay and APNs")
        #expect(spoofed == 429, "a second push from 127.0.0.7 is limited as 127.0.0.7, whatever X-Forwarded-For says")
        #expect(other == 200, "127.0.0.8 has its own budget")
        #expect(apns == 2)
    }
}
