import Foundation
import PushPlatform

/// Debian's stock `nghttpd` (package nghttp2-server) on 127.0.0.1 with `--echo-upload`, so a
/// POST to any path is answered 200 with its own body: an HTTP/2 peer that is not ours, to
/// prove the client against a server whose code we did not write. Its throwaway CA and
/// certificate are made with the `openssl` command in a private temporary directory.
public final class StockNghttpd: @unchecked Sendable {
    public let port: Int
    /// The PEM of the CA that signed the server certificate (IP:127.0.0.1).
    public let caPath: String
    public let directory: String
    private let process: Process

    public var baseURL: String { "https://127.0.0.1:\(port)" }

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    public static let executable = "/usr/sbin/nghttpd"

    public init() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw StartError(description: "\(Self.executable) is missing: install Debian's nghttp2-server")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-nghttpd-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        caPath = directory + "/ca.pem"
        do {
            try TestServerFiles.makeCertificates(in: directory, caName: "hapi test CA", serverName: "127.0.0.1", subjectAltNames: "IP:127.0.0.1,DNS:localhost")
        } catch {
            throw StartError(description: error.description)
        }
        try FileManager.default.createDirectory(atPath: directory + "/htdocs", withIntermediateDirectories: true)

        // A free port: bind to 0, read it back, release it, let nghttpd take it (retried if raced).
        var lastFailure = "never started"
        for _ in 0..<5 {
            let candidate = try TestServerFiles.freePort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.executable)
            process.arguments = [
                "--echo-upload", "--htdocs", directory + "/htdocs", "--address", "127.0.0.1", String(candidate),
                directory + "/server.key", directory + "/server.pem",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            if Self.waitForListener(port: candidate, process: process) {
                self.port = candidate
                self.process = process
                return
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            lastFailure = "nghttpd did not listen on port \(candidate) (status \(process.terminationStatus))"
        }
        throw StartError(description: lastFailure)
    }

    deinit { stop() }

    /// SIGKILL: nghttpd lets in-flight connections finish on SIGTERM, and a test must not
    /// wait for that.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    static func waitForListener(port: Int, process: Process) -> Bool {
        for _ in 0..<200 {
            guard process.isRunning else { return false }
            let fd = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false, closeOnExec: false)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if connected { return true }
            usleep(20_000)
        }
        return false
    }
}
