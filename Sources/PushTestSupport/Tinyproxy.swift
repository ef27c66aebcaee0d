import Foundation

/// Debian's stock `tinyproxy` on 127.0.0.1, started with a generated configuration: CONNECT
/// allowed to the given ports only (403 for any other), Basic authentication when a user is
/// given, every request logged at the `Connect` level, so a test reads the CONNECT lines the
/// proxy saw. Optionally behind a TLS front (`socat`, Debian's package) to be an `https://`
/// proxy, since tinyproxy itself speaks plain HTTP only.
public final class Tinyproxy: @unchecked Sendable {
    public let port: Int
    public let directory: String
    /// The TLS front's port when started with `tls: true`, and the CA that signed its
    /// certificate (`IP:127.0.0.1`).
    public private(set) var tlsPort: Int?
    public private(set) var tlsCAPath: String?
    private var processes: [Process]
    private let credentials: (user: String, password: String)?

    public static let executable = "/usr/bin/tinyproxy"
    public static let socat = "/usr/bin/socat"

    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    /// - Parameters:
    ///   - connectPorts: the only ports CONNECT may reach.
    ///   - user, password: Basic credentials the proxy demands (none when nil).
    ///   - tls: also start a TLS front that forwards to the proxy (an `https://` proxy).
    public init(connectPorts: [Int], user: String? = nil, password: String? = nil, tls: Bool = false) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw StartError(description: "\(Self.executable) is missing: install Debian's tinyproxy")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-tinyproxy-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        credentials = user.map { ($0, password ?? "") }
        var started: Process?
        var chosen = 0
        var lastFailure = "never started"
        for _ in 0..<5 {
            let candidate = try TestServerFiles.freePort()
            var lines = [
                "Port \(candidate)", "Listen 127.0.0.1", "Timeout 30", "LogFile \"\(directory)/tinyproxy.log\"", "LogLevel Connect",
                "MaxClients 200", "Allow 127.0.0.1", "DisableViaHeader Yes",
            ]
            lines += connectPorts.map { "ConnectPort \($0)" }
            if let user { lines.append("BasicAuth \(user) \(password ?? "")") }
            try (lines.joined(separator: "\n") + "\n").write(toFile: directory + "/tinyproxy.conf", atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.executable)
            process.arguments = ["-d", "-c", directory + "/tinyproxy.conf"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            if StockNghttpd.waitForListener(port: candidate, process: process) {
                started = process
                chosen = candidate
                break
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            lastFailure = "tinyproxy did not listen on port \(candidate) (status \(process.terminationStatus))"
        }
        guard let started else { throw StartError(description: lastFailure) }
        port = chosen
        processes = [started]
        guard tls else { return }
        guard FileManager.default.isExecutableFile(atPath: Self.socat) else {
            stop()
            throw StartError(description: "\(Self.socat) is missing: install Debian's socat (the https:// proxy's TLS front)")
        }
        do {
            try TestServerFiles.makeCertificates(in: directory, caName: "hapi proxy CA", serverName: "127.0.0.1", subjectAltNames: "IP:127.0.0.1,DNS:localhost")
        } catch {
            stop()
            throw StartError(description: error.description)
        }
        for _ in 0..<5 {
            let candidate = try TestServerFiles.freePort()
            let front = Process()
            front.executableURL = URL(fileURLWithPath: Self.socat)
            front.arguments = [
                "OPENSSL-LISTEN:\(candidate),bind=127.0.0.1,reuseaddr,fork,verify=0,cert=\(directory)/server.pem,key=\(directory)/server.key",
                "TCP:127.0.0.1:\(chosen)",
            ]
            front.standardOutput = FileHandle.nullDevice
            front.standardError = FileHandle.nullDevice
            try front.run()
            if StockNghttpd.waitForListener(port: candidate, process: front) {
                processes.append(front)
                tlsPort = candidate
                tlsCAPath = directory + "/ca.pem"
                return
            }
            kill(front.processIdentifier, SIGKILL)
            front.waitUntilExit()
        }
        stop()
        throw StartError(description: "socat's TLS front did not listen")
    }

    deinit { stop() }

    /// The proxy's URL, with the configured credentials (or `user`/`password` given here).
    public func url(user: String? = nil, password: String? = nil, tls: Bool = false) -> String {
        let user = user ?? credentials?.user
        let password = password ?? credentials?.password
        let userInfo = user.map { "\(Self.encode($0)):\(Self.encode(password ?? ""))@" } ?? ""
        if tls, let tlsPort { return "https://\(userInfo)127.0.0.1:\(tlsPort)" }
        return "http://\(userInfo)127.0.0.1:\(port)"
    }

    /// The `CONNECT host:port` targets the proxy logged, in order.
    public var connectTargets: [String] {
        guard let log = try? String(contentsOfFile: directory + "/tinyproxy.log", encoding: .utf8) else { return [] }
        return log.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: "): CONNECT ") else { return nil }
            return line[range.upperBound...].split(separator: " ").first.map(String.init)
        }
    }

    /// The log as written (for a test's failure message and the secrets scan).
    public var log: String { (try? String(contentsOfFile: directory + "/tinyproxy.log", encoding: .utf8)) ?? "" }

    public func stop() {
        for process in processes where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        processes = []
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
    }
}
