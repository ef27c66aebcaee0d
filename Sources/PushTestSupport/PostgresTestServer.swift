import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushSync

/// Why a ``PostgresTestServer`` could not start; the message says what to install or fix.
public struct PostgresTestServerError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { "PostgreSQL test server: \(message)" }
}

/// A real PostgreSQL server for tests and `make bench`: `initdb` in a temporary directory,
/// `pg_ctl` on a free 127.0.0.1 port (TCP only, no socket file), password authentication, and
/// a watchdog process that stops it and removes the directory as soon as the process that
/// started it exits, however it exits.
///
/// PostgreSQL refuses to run as root, so as root the server runs as an unprivileged user:
/// `postgres` (made by the Debian package), else `nobody`, else one created with `useradd`;
/// the commands are run through `setpriv` (util-linux, always on Debian).
public final class PostgresTestServer: @unchecked Sendable {
    // @unchecked: every member is immutable after init except the `state` lock's contents.
    public let port: Int
    public let user = "hapi"
    public let password: String
    public let directory: String
    let dataDirectory: String
    let binDirectory: String
    let runAs: (uid: uid_t, gid: gid_t)?
    private let stopped = NSLock()
    private var isStopped = false

    /// `postgresql://hapi:<password>@127.0.0.1:<port>/postgres`.
    public var url: String { "postgresql://\(user):\(password)@127.0.0.1:\(port)/postgres" }
    /// The URL of another database on the same server (create it with ``createDatabase(_:)``).
    public func url(database: String) -> String { "postgresql://\(user):\(password)@127.0.0.1:\(port)/\(database)" }

    /// Initializes and starts a server. Throws with the reason when it cannot.
    public init() throws {
        binDirectory = try Self.findBinaries()
        runAs = try Self.unprivilegedAccount()
        password = "pw-" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(20).lowercased()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-pg-\(UUID().uuidString)").path
        dataDirectory = directory + "/data"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if let runAs, chown(directory, runAs.uid, runAs.gid) != 0 {
            throw PostgresTestServerError(message: "cannot hand \(directory) to uid \(runAs.uid): \(String(cString: strerror(errno)))")
        }
        let passwordFile = directory + "/pwfile"
        try Data((password + "\n").utf8).write(to: URL(fileURLWithPath: passwordFile))
        if let runAs { _ = chown(passwordFile, runAs.uid, runAs.gid) }
        chmod(passwordFile, 0o600)
        let initdb = try Self.run(
            binDirectory + "/initdb",
            ["-D", dataDirectory, "-U", user, "--pwfile=" + passwordFile, "--auth=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync"],
            as: runAs)
        guard initdb.status == 0 else {
            throw PostgresTestServerError(message: "initdb failed (\(initdb.status)): \(initdb.output.suffix(800))")
        }
        try? FileManager.default.removeItem(atPath: passwordFile)
        var lastFailure = ""
        var started: Int?
        for _ in 0..<3 {
            let candidate = try TestServerFiles.freePort()
            if try Self.startServer(bin: binDirectory, data: dataDirectory, port: candidate, log: directory + "/server.log", as: runAs, failure: &lastFailure) {
                started = candidate
                break
            }
        }
        guard let started else {
            try? FileManager.default.removeItem(atPath: directory)
            throw PostgresTestServerError(message: "pg_ctl start failed: \(lastFailure)")
        }
        port = started
        Self.startWatchdog(bin: binDirectory, data: dataDirectory, directory: directory, as: runAs)
    }

    deinit { stop() }

    /// The one server a test process shares (started on first use, stopped when the process
    /// exits). Throws the reason it could not start, every time it is asked.
    public static func shared() throws -> PostgresTestServer { try sharedServer.get() }
    private static let sharedServer = Result { try PostgresTestServer() }

    /// Starts a server on a thread of its own, so the calling task suspends meanwhile.
    public static func start() async throws -> PostgresTestServer {
        try await offPool { try PostgresTestServer() }
    }

    /// ``restart(mode:)`` on a thread of its own.
    public func restartAsync(mode: String = "immediate") async throws {
        try await Self.offPool { try self.restart(mode: mode) }
    }

    /// ``psql(_:database:)`` on a thread of its own.
    @discardableResult
    public func psqlAsync(_ sql: String, database: String = "postgres") async throws -> String {
        try await Self.offPool { try self.psql(sql, database: database) }
    }

    /// Runs blocking harness work (initdb, pg_ctl, psql) off the Swift concurrency pool.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let result = try await BlockingWorkers<Void>.runOnce(
            name: "hapi-pg-test", unavailable: PostgresTestServerError(message: "no thread for the harness")
        ) { () throws(PostgresTestServerError) -> Result<T, any Error> in
            Result { try body() }
        }
        return try result.get()
    }

    /// Stops the server (fast shutdown) and removes its directory. Idempotent.
    public func stop() {
        stopped.lock()
        defer { stopped.unlock() }
        guard !isStopped else { return }
        isStopped = true
        _ = try? Self.run(binDirectory + "/pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "-t", "30", "stop"], as: runAs)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Stops the server the way a crash or an operator would (`immediate` kills every backend
    /// without a checkpoint; `fast` ends sessions cleanly), then starts it again on the same
    /// port. Clients' connections are all broken.
    public func restart(mode: String = "immediate") throws {
        let stop = try Self.run(binDirectory + "/pg_ctl", ["-D", dataDirectory, "-m", mode, "-w", "-t", "30", "stop"], as: runAs)
        guard stop.status == 0 else { throw PostgresTestServerError(message: "pg_ctl stop failed: \(stop.output.suffix(400))") }
        try startAgain()
    }

    /// Stops the server until ``startAgain()``.
    public func pause(mode: String = "immediate") throws {
        let stop = try Self.run(binDirectory + "/pg_ctl", ["-D", dataDirectory, "-m", mode, "-w", "-t", "30", "stop"], as: runAs)
        guard stop.status == 0 else { throw PostgresTestServerError(message: "pg_ctl stop failed: \(stop.output.suffix(400))") }
    }

    public func startAgain() throws {
        var failure = ""
        guard try Self.startServer(bin: binDirectory, data: dataDirectory, port: port, log: directory + "/server.log", as: runAs, failure: &failure)
        else { throw PostgresTestServerError(message: "pg_ctl start after stop failed: \(failure)") }
    }

    /// Runs SQL through `psql` (for test set-up and checks), returning its unaligned output.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
        let result = try Self.run(
            binDirectory + "/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url(database: database), "-c", sql], as: nil)
        guard result.status == 0 else { throw PostgresTestServerError(message: "psql failed: \(result.output.suffix(400))") }
        return result.output
    }

    /// Creates a database (each test suite or bench run can have its own).
    public func createDatabase(_ name: String) throws {
        try psql("CREATE DATABASE \"\(name)\"")
    }

    // MARK: - Helpers

    /// `HAPI_TEST_POSTGRES_BIN`, else the newest /usr/lib/postgresql/N/bin with initdb.
    static func findBinaries() throws -> String {
        if let explicit = ProcessInfo.processInfo.environment["HAPI_TEST_POSTGRES_BIN"], !explicit.isEmpty { return explicit }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        for version in versions where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        throw PostgresTestServerError(
            message: "no PostgreSQL server found under /usr/lib/postgresql: install the Debian package `postgresql` (make test does this as root)")
    }

    /// Nil when not root; otherwise an account PostgreSQL will run as.
    static func unprivilegedAccount() throws -> (uid: uid_t, gid: gid_t)? {
        guard getuid() == 0 else { return nil }
        for name in ["postgres", "nobody"] {
            if let entry = getpwnam(name), entry.pointee.pw_uid != 0 { return (entry.pointee.pw_uid, entry.pointee.pw_gid) }
        }
        let created = try run("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "hapi-push-test"], as: nil)
        if let entry = getpwnam("hapi-push-test") { return (entry.pointee.pw_uid, entry.pointee.pw_gid) }
        throw PostgresTestServerError(
            message: "running as root and no unprivileged account to run PostgreSQL as (useradd: \(created.output.suffix(200)))")
    }

    /// The path of one of the server's programs (psql, pg_ctl, …).
    public static func binary(_ name: String) throws -> String { try findBinaries() + "/" + name }

    private static func startServer(
        bin: String, data: String, port: Int, log: String, as account: (uid: uid_t, gid: gid_t)?, failure: inout String
    ) throws -> Bool {
        // fsync off: a test server's data need only survive a killed process, not a power cut
        // (the kernel keeps what was written). Commits still wait for their WAL write.
        let options = [
            "-p \(port)", "-c listen_addresses=127.0.0.1", "-c unix_socket_directories=''", "-c fsync=off", "-c full_page_writes=off",
            "-c max_connections=200", "-c shared_buffers=64MB",
        ].joined(separator: " ")
        let result = try run(bin + "/pg_ctl", ["-D", data, "-l", log, "-o", options, "-w", "-t", "60", "start"], as: account)
        if result.status == 0 { return true }
        let serverLog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        failure = "\(result.output.suffix(300)) \(serverLog.suffix(600))"
        return false
    }

    /// A detached shell that waits for this process to end, then stops the server and removes
    /// its directory: nothing is left running after a crashed or killed test run.
    private static func startWatchdog(bin: String, data: String, directory: String, as account: (uid: uid_t, gid: gid_t)?) {
        let stop = privileged(account, [bin + "/pg_ctl", "-D", data, "-m", "immediate", "-w", "-t", "30", "stop"])
            .map(shellQuoted).joined(separator: " ")
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 0.5; done; \(stop) >/dev/null 2>&1; rm -rf \(shellQuoted(directory))"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        process.arguments = ["/bin/sh", "-c", script]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try? process.run()
    }

    private static func privileged(_ account: (uid: uid_t, gid: gid_t)?, _ command: [String]) -> [String] {
        guard let account else { return command }
        return ["/usr/bin/setpriv", "--reuid=\(account.uid)", "--regid=\(account.gid)", "--clear-groups", "--"] + command
    }

    private static func shellQuoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// Runs a command (through setpriv as `account` when given) and returns its status and
    /// combined output. posix_spawn and waitpid directly, output through a file: pg_ctl's
    /// server outlives the command, and nothing here may wait on a pipe it keeps open.
    static func run(_ executable: String, _ arguments: [String], as account: (uid: uid_t, gid: gid_t)?) throws -> (status: Int32, output: String) {
        // pg_ctl must not start in a directory the server's user cannot read: cd / first.
        let command = ["/bin/sh", "-c", "cd / && exec \"$@\"", "sh"] + privileged(account, [executable] + arguments)
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-pg-cmd-\(UUID().uuidString).log").path
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var argv: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, command[0], &actions, nil, &argv, environ)
        guard rc == 0 else { throw PostgresTestServerError(message: "cannot run \(command[0]): \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw PostgresTestServerError(message: "waitpid(\(command[0])): \(String(cString: strerror(errno)))") }
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS, which do not import.
        let exitStatus: Int32 = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return (exitStatus, output)
    }
}
