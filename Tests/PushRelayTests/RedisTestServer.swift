import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushSync
import PushTestSupport

/// A real `redis-server` (Debian's) for the relay's shared-limit tests: a private temporary
/// directory, 127.0.0.1 on a free port, no persistence (`--save '' --appendonly no`),
/// optionally a password and TLS (a throwaway CA and certificate made with `openssl`). Stopped
/// with SIGKILL by `stop()` and by `deinit`; a watchdog shell kills it and removes the directory
/// if the test process dies first. Throws the reason when it cannot start (a test then fails).
final class RedisTestServer: @unchecked Sendable {
    // @unchecked: `pid` is locked; everything else is immutable after init.
    struct StartError: Error, CustomStringConvertible {
        let description: String
    }

    /// The certificate's subject alternative names, e.g. `DNS:localhost,IP:127.0.0.1`.
    enum Transport {
        case plain
        case tls(names: String)
    }

    static let executable = "/usr/bin/redis-server"
    static let cliExecutable = "/usr/bin/redis-cli"

    let port: Int
    let directory: String
    let password: String?
    let usesTLS: Bool
    /// The PEM of the CA that signed the server's certificate (TLS only).
    let caPath: String?
    private let arguments: [String]
    private let pid = Locked<pid_t?>(nil)

    /// `redis://[:password@]127.0.0.1:PORT/0` (`rediss://` with TLS).
    var url: String { url(host: "127.0.0.1") }
    func url(host: String, password: String? = nil, database: Int = 0) -> String {
        let secret = password ?? self.password
        return (usesTLS ? "rediss://" : "redis://") + (secret.map { ":\($0)@" } ?? "") + "\(host):\(port)/\(database)"
    }

    init(password: String? = nil, transport: Transport = .plain, port fixedPort: Int? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw StartError(description: "\(Self.executable) is missing: install Debian's redis-server (make test does)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-redis-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        self.password = password
        var common = [
            "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory, "--logfile", directory + "/redis.log",
            "--daemonize", "no", "--protected-mode", "no", "--databases", "16",
        ]
        if let password { common += ["--requirepass", password] }
        switch transport {
        case .plain:
            usesTLS = false
            caPath = nil
        case .tls(let names):
            usesTLS = true
            caPath = directory + "/ca.pem"
            try TestServerFiles.makeCertificates(in: directory, caName: "hapi redis test CA", serverName: "redis test server", subjectAltNames: names)
            common += [
                "--tls-cert-file", directory + "/server.pem", "--tls-key-file", directory + "/server.key", "--tls-ca-cert-file",
                directory + "/ca.pem", "--tls-auth-clients", "no",
            ]
        }
        var lastFailure = "never started"
        for _ in 0..<(fixedPort == nil ? 5 : 1) {
            let candidate = try fixedPort ?? TestServerFiles.freePort()
            let portArguments = usesTLS ? ["--port", "0", "--tls-port", String(candidate)] : ["--port", String(candidate)]
            let arguments = portArguments + common
            do {
                let child = try Self.launch(arguments, directory: directory)
                if Self.waitForListener(port: candidate, pid: child) {
                    port = candidate
                    self.arguments = arguments
                    pid.withLock { $0 = child }
                    return
                }
                Self.killAndReap(child)
                let log = (try? String(contentsOfFile: directory + "/redis.log", encoding: .utf8)) ?? ""
                lastFailure = "redis-server did not listen on \(candidate): \(log.suffix(400))"
            } catch {
                lastFailure = "\(error)"
            }
        }
        try? FileManager.default.removeItem(atPath: directory)
        throw StartError(description: lastFailure)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// SIGKILL and reap (idempotent); the directory stays for `startAgain()`.
    func stop() {
        let running = pid.withLock { pid -> pid_t? in
            defer { pid = nil }
            return pid
        }
        if let running { Self.killAndReap(running) }
    }

    /// SIGSTOP: the server keeps its port and connections but answers nothing.
    func pause() { pid.withLock { if let pid = $0 { kill(pid, SIGSTOP) } } }
    func resume() { pid.withLock { if let pid = $0 { kill(pid, SIGCONT) } } }

    /// Starts it again on the same port (after `stop()`), empty: nothing was persisted.
    func startAgain() throws {
        stop()
        for _ in 0..<50 {
            let child = try Self.launch(arguments, directory: directory)
            if Self.waitForListener(port: port, pid: child) {
                pid.withLock { $0 = child }
                return
            }
            Self.killAndReap(child)
            usleep(50_000)  // the port may still be held for a moment
        }
        throw StartError(description: "redis-server did not start again on \(port)")
    }

    /// Runs `redis-cli` against the server and returns its raw output, trimmed.
    @discardableResult
    func cli(_ command: String...) throws -> String { try cli(command) }

    /// `cli` with the arguments as an array (options such as `-n 3` may lead).
    @discardableResult
    func cli(_ command: [String]) throws -> String {
        var arguments = ["-h", "127.0.0.1", "-p", String(port), "--raw", "--no-auth-warning"]
        if usesTLS, let caPath { arguments += ["--tls", "--cacert", caPath] }
        if let password { arguments += ["-a", password] }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.cliExecutable)
        process.arguments = arguments + command
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        do { try process.run() } catch { throw StartError(description: "cannot run \(Self.cliExecutable) (Debian redis-tools): \(error)") }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Every key, sorted.
    func keys() throws -> [String] {
        try cli("--scan").split(separator: "\n").map(String.init).sorted()
    }

    // MARK: - Helpers

    private static func launch(_ arguments: [String], directory: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = [executable] + arguments
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var child = pid_t()
        let rc = posix_spawn(&child, executable, &actions, nil, &cArguments, environ)
        guard rc == 0 else { throw StartError(description: "cannot run \(executable): \(String(cString: strerror(rc)))") }
        startWatchdog(for: child, directory: directory)
        return child
    }

    /// A detached shell that outlives this process: once the test process is gone it kills the
    /// server and removes its directory; it exits by itself as soon as the server is gone.
    private static func startWatchdog(for child: pid_t, directory: String) {
        let quoted = "'" + directory.replacingOccurrences(of: "'", with: "'\\''") + "'"
        let script = """
            ( while kill -0 \(getpid()) 2>/dev/null && kill -0 \(child) 2>/dev/null; do sleep 0.2; done; \
            if ! kill -0 \(getpid()) 2>/dev/null; then kill -9 \(child) 2>/dev/null; rm -rf \(quoted); fi ) \
            </dev/null >/dev/null 2>&1 &
            """
        let shellArguments = ["/bin/sh", "-c", script]
        var cArguments: [UnsafeMutablePointer<CChar>?] = shellArguments.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var shell = pid_t()
        if posix_spawn(&shell, "/bin/sh", nil, nil, &cArguments, environ) == 0 {
            var status: Int32 = 0
            while waitpid(shell, &status, 0) < 0 && errno == EINTR {}
        }
    }

    private static func killAndReap(_ child: pid_t) {
        kill(child, SIGCONT)
        kill(child, SIGKILL)
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
    }

    /// True once 127.0.0.1:`port` accepts a connection (5 s at most); false if the child exited.
    private static func waitForListener(port: Int, pid: pid_t) -> Bool {
        for _ in 0..<500 {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return false }
            let fd = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false, closeOnExec: false)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            close(fd)
            if connected { return true }
            usleep(10_000)
        }
        return false
    }
}
