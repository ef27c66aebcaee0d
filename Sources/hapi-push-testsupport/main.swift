import CHapiSQLite
import Foundation
import PushEnvelope
import PushNative

/// Child processes for the test suite: a second writer on the same SQLite file, and a writer
/// that reports each acknowledged registration so a test can `kill -9` it and check that
/// every acknowledged row survived. Not installed, not part of the public CLI.
///
///   hapi-push-testsupport registry-writer --path FILE --namespace NS --count N --prefix P [--ack]
///   hapi-push-testsupport settings-writer --dir DIR --key K --value V [--count N] [--crash-before-rename]
///   hapi-push-testsupport registry-writer-postgres --url URL --table T --count N --prefix P [--shared S] [--tasks K]
///   hapi-push-testsupport registry-lock --path FILE
///       holds SQLite's write lock (BEGIN IMMEDIATE plus a write) until a line or EOF on stdin
///
/// Both print one line per acknowledged write (`ack <deviceId>`, `added <keys>`) with a single
/// unbuffered write(2) before the next write starts, so a parent that reads a line knows the
/// write it names had returned before any later `kill -9`.

func argument(_ name: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

/// One whole line on stdout, unbuffered (`print` is block-buffered into a pipe and would be lost
/// by a `kill -9`).
func acknowledge(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("hapi-push-testsupport: \(message)\n".utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "registry-writer":
    guard let path = argument("--path", in: arguments), let namespace = argument("--namespace", in: arguments),
        let countText = argument("--count", in: arguments), let count = Int(countText), let prefix = argument("--prefix", in: arguments)
    else { fail("usage: registry-writer --path FILE --namespace NS --count N --prefix P [--ack]") }
    let acknowledgeEach = arguments.contains("--ack")
    do {
        let store = try SQLitePushDeviceStore(configuration: .init(path: path))
        for index in 0..<count {
            let request = try PushRegistrationRequest(
                namespace: namespace, platform: "phone", deviceId: "\(prefix)-\(index)", token: "\(prefix)-token-\(index)", pushKey: nil)
            _ = try await store.upsert(request, now: Int64(index))
            if acknowledgeEach {
                // One line per acknowledged registration, written unbuffered before the next one starts.
                acknowledge("ack \(prefix)-\(index)")
            }
        }
        acknowledge("ok \(count)")
    } catch {
        fail("\(error)")
    }
case "settings-writer":
    // settings-writer --dir DIR --key K --value V [--crash-before-rename]
    guard let directory = argument("--dir", in: arguments), let key = argument("--key", in: arguments),
        let value = argument("--value", in: arguments)
    else { fail("usage: settings-writer --dir DIR --key K --value V [--count N] [--crash-before-rename]") }
    if arguments.contains("--crash-before-rename") {
        SettingsFile._setBeforeRenameHookForTesting { kill(getpid(), SIGKILL) }
    }
    let count = argument("--count", in: arguments).flatMap(Int.init) ?? 1
    do {
        for index in 0..<count {
            let name = count == 1 ? key : "\(key)-\(index)"
            let added = try SettingsFile(directory: directory).addMissing([name: value])
            acknowledge("added \(added.joined(separator: ","))")
        }
    } catch {
        fail("\(error)")
    }
case "registry-lock":
    // Another process holding the registry's write lock, as a stuck or slow writer would.
    guard let path = argument("--path", in: arguments) else { fail("usage: registry-lock --path FILE") }
    var db: OpaquePointer?
    guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let db else { fail("cannot open \(path)") }
    guard sqlite3_exec(db, "BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS lock_holder (x INTEGER); INSERT INTO lock_holder VALUES (1)", nil, nil, nil) == SQLITE_OK
    else { fail("cannot lock: \(String(cString: sqlite3_errmsg(db)))") }
    acknowledge("locked")
    _ = readLine()
    guard sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK else { fail("cannot commit") }
    sqlite3_close(db)
    acknowledge("released")
case "registry-writer-postgres":
    // A hub process registering into a shared PostgreSQL registry: `count` devices
    // `<prefix>-<i>` in namespace `<prefix>-ns-<i % 7>`, the first `shared` of them with the
    // token `shared-token-<i>` (which the other process registers too), the rest with their own.
    // Prints "ready", waits for a line on stdin so both processes start at once, then writes
    // from `tasks` concurrent tasks and prints "ok <count> retries <n>".
    guard let url = argument("--url", in: arguments), let table = argument("--table", in: arguments),
        let count = argument("--count", in: arguments).flatMap(Int.init), let prefix = argument("--prefix", in: arguments)
    else { fail("usage: registry-writer-postgres --url URL --table T --count N --prefix P [--shared S] [--tasks K]") }
    let shared = argument("--shared", in: arguments).flatMap(Int.init) ?? 0
    let tasks = argument("--tasks", in: arguments).flatMap(Int.init) ?? 4
    do {
        let store = try await PostgresPushDeviceStore.open(configuration: try .init(url: url, tableName: table, maximumConnections: tasks))
        acknowledge("ready")
        _ = readLine()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for index in stride(from: task, to: count, by: tasks) {
                        let token = index < shared ? "shared-token-\(index)" : "\(prefix)-token-\(index)"
                        let request = try PushRegistrationRequest(
                            namespace: "\(prefix)-ns-\(index % 7)", platform: "phone", deviceId: "\(prefix)-\(index)", token: token, pushKey: nil)
                        _ = try await store.upsert(request, now: Int64(index))
                    }
                }
            }
            try await group.waitForAll()
        }
        acknowledge("ok \(count) retries \(PostgresPushDeviceStore.conflictRetries)")
    } catch {
        fail("\(error)")
    }
default:
    fail("unknown command; see the source for usage")
}
