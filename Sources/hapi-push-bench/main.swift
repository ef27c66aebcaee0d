import CHapiOpenSSL
import CHapiPostgres
import CHapiSQLite
import Foundation
import PushLoopbackServer
import PushHTTP
import PushEnvelope
import PushNative
import PushSync
import PushRelay
import PushTestSupport

/// `make bench`: every figure is printed next to a reference measured in the same run, as a
/// ratio, because absolute numbers on a shared 2-core machine mean little.

func measure(seconds: Double = 1.0, _ body: () throws -> Void) rethrows -> Double {
    // Warm up, then count iterations for `seconds` of wall time.
    for _ in 0..<200 { try body() }
    let start = DispatchTime.now().uptimeNanoseconds
    var iterations = 0
    var elapsed: Double = 0
    repeat {
        for _ in 0..<100 { try body() }
        iterations += 100
        elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    } while elapsed < seconds
    return Double(iterations) / elapsed
}

func format(_ rate: Double) -> String { String(format: "%12.0f/s", rate) }

/// The reference: one raw AES-256-GCM encryption of the same plaintext through OpenSSL EVP,
/// with no JSON, no base64 and no random nonce: the floor any seal must pay.
func rawAESGCM(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) -> Int32 {
    guard let ctx = EVP_CIPHER_CTX_new() else { return 0 }
    defer { EVP_CIPHER_CTX_free(ctx) }
    var out = [UInt8](repeating: 0, count: plaintext.count + 16)
    var length: Int32 = 0
    var tag = [UInt8](repeating: 0, count: 16)
    EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce)
    EVP_EncryptUpdate(ctx, nil, &length, PushEnvelopeCipher.associatedData, Int32(PushEnvelopeCipher.associatedData.count))
    EVP_EncryptUpdate(ctx, &out, &length, plaintext, Int32(plaintext.count))
    EVP_EncryptFinal_ex(ctx, &out, &length)
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, &tag)
    return length
}

func benchEnvelope() throws {
    let key = try PushKey.generate()
    let payload = PushNotificationPayload(
        type: .permissionRequest, sessionId: "0d5c1a9e-5f7e-4d8b-9a55-3f1f7d2c8b11", sessionName: "claude - hapi",
        url: "/sessions/0d5c1a9e-5f7e-4d8b-9a55-3f1f7d2c8b11", requestId: "toolu_01HXYZ",
        title: "Permission request", body: "Bash: swift test --parallel (in /home/dev/hapi)", severity: .warning)
    let plaintext = payload.canonicalJSON
    let nonce = [UInt8](repeating: 7, count: 12)
    print("== Envelope (typical payload, \(plaintext.count)-byte plaintext) ==")
    var sink = 0
    let reference = measure { sink &+= Int(rawAESGCM(plaintext, key: key.rawBytes, nonce: nonce)) }
    let sealOnly = try measure { sink &+= try PushEnvelopeCipher.seal(plaintext, key: key).utf8.count }
    let composeAndSeal = try measure { sink &+= try PushEnvelopeCipher.seal(payload.canonicalJSON, key: key).utf8.count }
    let envelope = try PushEnvelopeCipher.seal(plaintext, key: key)
    let open = try measure { sink &+= try PushEnvelopeCipher.open(envelope, key: key).count }
    print("raw OpenSSL AES-256-GCM (reference) \(format(reference))")
    print("seal (random nonce + base64)        \(format(sealOnly))   ratio \(String(format: "%.2f", sealOnly / reference))")
    print("canonical JSON + seal               \(format(composeAndSeal))   ratio \(String(format: "%.2f", composeAndSeal / reference))")
    print("open (base64 + verify)              \(format(open))   ratio \(String(format: "%.2f", open / reference))")
    // Generic canonical JSON: a parsed object like a session's agent state (nested, mixed keys).
    let generic = try JSONParser.parse(
        #"{"requests":{"toolu_01HXYZ":{"tool":"Bash","arguments":{"command":"swift test --parallel","description":"Run the tests","timeout":120000}},"toolu_02ABCD":{"tool":"Edit","arguments":{"file_path":"/home/dev/hapi/Sources/App.swift","old_string":"let a = 1","new_string":"let a = 2"}}},"controlledByUser":false,"thinking":true,"completedRequests":{},"version":42,"é":"x","10":1,"2":2}"#)
    let genericBytes = generic.canonicalBytes.count
    let genericRate = measure { sink &+= generic.canonicalBytes.count }
    print("canonical JSON, generic \(genericBytes) B     \(format(genericRate))   ratio \(String(format: "%.2f", genericRate / reference))")
    if sink == 42 { print("") }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// The reference: raw SQLite running the store's own statements on the store's own schema (a
/// file the store created, so the same table, unique key, token index and listing index), with
/// the same pragmas (WAL, synchronous=NORMAL): per registration `BEGIN IMMEDIATE`, the token
/// eviction, the upsert with `RETURNING created_at`, `COMMIT`; per listing the same SELECT with
/// every column read.
final class RawSQLite {
    let db: OpaquePointer
    let evict: OpaquePointer
    let upsert: OpaquePointer
    let list: OpaquePointer

    init?(path: String, table: String) {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let handle else { return nil }
        sqlite3_exec(handle, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", nil, nil, nil)
        let t = "\"\(table)\""
        func prepare(_ sql: String) -> OpaquePointer? {
            var statement: OpaquePointer?
            return sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK ? statement : nil
        }
        guard
            let evict = prepare("DELETE FROM \(t) WHERE token = ?1 AND NOT (namespace = ?2 AND device_id = ?3 AND platform = ?4)"),
            let upsert = prepare(
                "INSERT INTO \(t) (namespace, token, platform, device_id, push_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                    + " ON CONFLICT (namespace, device_id, platform) DO UPDATE SET token = excluded.token, push_key = excluded.push_key, updated_at = excluded.updated_at"
                    + " RETURNING created_at"),
            let list = prepare(
                "SELECT device_id, platform, token, push_key, created_at, updated_at FROM \(t) WHERE namespace = ? ORDER BY updated_at DESC, id DESC")
        else {
            sqlite3_close(handle)
            return nil
        }
        (db, self.evict, self.upsert, self.list) = (handle, evict, upsert, list)
    }

    deinit {
        for statement in [evict, upsert, list] { sqlite3_finalize(statement) }
        sqlite3_close(db)
    }

    func bind(_ statement: OpaquePointer, _ index: Int32, _ text: String?) {
        if let text { sqlite3_bind_text(statement, index, text, -1, hapi_sqlite_transient()) } else { sqlite3_bind_null(statement, index) }
    }

    /// One registration, as the store writes it; returns the stored `created_at`.
    func register(_ request: PushRegistrationRequest, now: Int64) -> Int64 {
        sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
        let platform = request.platform.rawValue
        bind(evict, 1, request.token)
        bind(evict, 2, request.namespace)
        bind(evict, 3, request.deviceId)
        bind(evict, 4, platform)
        sqlite3_step(evict)
        sqlite3_reset(evict)
        sqlite3_clear_bindings(evict)
        bind(upsert, 1, request.namespace)
        bind(upsert, 2, request.token)
        bind(upsert, 3, platform)
        bind(upsert, 4, request.deviceId)
        bind(upsert, 5, request.pushKey?.base64)
        sqlite3_bind_int64(upsert, 6, now)
        sqlite3_bind_int64(upsert, 7, now)
        let createdAt = sqlite3_step(upsert) == SQLITE_ROW ? sqlite3_column_int64(upsert, 0) : now
        sqlite3_reset(upsert)
        sqlite3_clear_bindings(upsert)
        sqlite3_exec(db, "COMMIT", nil, nil, nil)
        return createdAt
    }

    /// One namespace listed, every column read (bytes summed, as a decoder must touch them).
    func devices(namespace: String) -> (rows: Int, bytes: Int) {
        bind(list, 1, namespace)
        var rows = 0
        var bytes = 0
        while sqlite3_step(list) == SQLITE_ROW {
            rows += 1
            for column in Int32(0)..<4 where sqlite3_column_text(list, column) != nil { bytes &+= Int(sqlite3_column_bytes(list, column)) }
            bytes &+= Int(sqlite3_column_int64(list, 4) &+ sqlite3_column_int64(list, 5)) & 1
        }
        sqlite3_reset(list)
        sqlite3_clear_bindings(list)
        return (rows, bytes)
    }
}

/// CPU time this process has used, every thread counted.
func processCPUSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

func benchRegistry() async throws {
    let count = 100_000
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-bench-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = try SQLitePushDeviceStore(directory: directory)
    // The reference's file: created and migrated by the store itself, so the schema is the same.
    let rawPath = directory + "/raw.sqlite3"
    _ = try SQLitePushDeviceStore(configuration: .init(path: rawPath))
    guard let raw = RawSQLite(path: rawPath, table: SQLitePushDeviceStore.defaultTableName) else { throw CancellationError() }
    let key = try PushKey.generate().base64
    func requests(_ prefix: String) throws -> [PushRegistrationRequest] {
        try (0..<count).map { i in
            try PushRegistrationRequest(
                namespace: "ns-\(i % 1000)", platform: i % 3 == 0 ? "ios" : "phone", deviceId: "\(prefix)device-\(i)",
                token: i % 3 == 0 ? Digest.hex(Digest.sha256(Array("\(prefix)\(i)".utf8))) : "\(prefix)fcm-token-\(i)",
                pushKey: i % 3 == 0 || i % 2 == 0 ? key : nil)
        }
    }
    let ours = try requests("")
    let theirs = try requests("")
    print("\n== Device registry (SQLite, WAL; \(count) registrations across 1000 namespaces; store next to raw SQLite, same statements, same schema) ==")
    // Half the rows one after another (each call waits for the last), in alternating chunks with
    // the reference so neither side gets the emptier or the fuller file; then the other half
    // from eight tasks at once, as a hub's registrations arrive (group commit).
    let half = count / 2
    let chunk = half / 20  // many short alternations: on a shared machine both sides see the same load
    var rawSeconds = 0.0
    var elapsed = 0.0
    var (rawCPU, storeCPU) = (0.0, 0.0)
    var created: Int64 = 0
    for start in stride(from: 0, to: half, by: chunk) {
        let range = start..<min(half, start + chunk)
        let storeFirst = (start / chunk) % 2 == 1
        func rawChunk() {
            let cpu = processCPUSeconds()
            rawSeconds += seconds { for i in range { created &+= raw.register(theirs[i], now: Int64(i)) } }
            rawCPU += processCPUSeconds() - cpu
        }
        if !storeFirst { rawChunk() }
        let cpu = processCPUSeconds()
        elapsed += try await secondsAsync {
            for i in range { _ = try await store.upsert(ours[i], now: Int64(i)) }
        }
        storeCPU += processCPUSeconds() - cpu
        if storeFirst { rawChunk() }
    }
    let rawConcurrentSeconds = seconds { for i in half..<count { created &+= raw.register(theirs[i], now: Int64(i)) } }
    let concurrentElapsed = try await secondsAsync {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<8 {
                group.addTask {
                    for i in stride(from: half + lane, to: count, by: 8) { _ = try await store.upsert(ours[i], now: Int64(i)) }
                }
            }
            try await group.waitForAll()
        }
    }
    let referenceRate = Double(half) / rawSeconds
    let rate = Double(half) / elapsed
    let concurrentReference = Double(count - half) / rawConcurrentSeconds
    let concurrentRate = Double(count - half) / concurrentElapsed
    print("raw SQLite BEGIN IMMEDIATE+evict+upsert+COMMIT (reference) \(format(referenceRate))")
    print("validated upsert + token dedup         \(format(rate))   ratio \(String(format: "%.2f", rate / referenceRate))   (one caller)")
    // Wall time is CPU time plus waiting (for the disk, and for a core on a loaded machine: each
    // store call is two thread hand-offs the raw loop does not make).
    print(
        String(
            format: "  per registration: raw %.1f µs wall, %.1f µs CPU; store %.1f µs wall, %.1f µs CPU (all threads)", rawSeconds / Double(half) * 1e6,
            rawCPU / Double(half) * 1e6, elapsed / Double(half) * 1e6, storeCPU / Double(half) * 1e6))
    print("  the same from 8 callers at once      \(format(concurrentRate))   ratio \(String(format: "%.2f", concurrentRate / concurrentReference))   (against \(format(concurrentReference)) raw)")
    // Listing: the same SELECT, raw (every column read) and the store (registrations built),
    // alternating rounds; both files hold the same 100,000 rows.
    let lists = 2000
    var listed = 0
    var rawListed = 0
    var rawBytes = 0
    var rawListSeconds = 0.0
    var listElapsed = 0.0
    var (rawListCPU, listCPU) = (0.0, 0.0)
    let rounds = 20
    for round in 0..<rounds {
        let range = (round * lists / rounds)..<((round + 1) * lists / rounds)
        let storeFirst = round % 2 == 1
        func rawRound() {
            let cpu = processCPUSeconds()
            defer { rawListCPU += processCPUSeconds() - cpu }
            rawListSeconds += seconds {
                for i in range {
                    let (rows, bytes) = raw.devices(namespace: "ns-\(i % 1000)")
                    rawListed += rows
                    rawBytes &+= bytes
                }
            }
        }
        if !storeFirst { rawRound() }
        let cpu = processCPUSeconds()
        listElapsed += try await secondsAsync {
            for i in range { listed += try await store.devices(namespace: "ns-\(i % 1000)", platforms: nil).count }
        }
        listCPU += processCPUSeconds() - cpu
        if storeFirst { rawRound() }
    }
    let rawListRate = Double(lists) / rawListSeconds
    let listRate = Double(lists) / listElapsed
    print(String(format: "raw SQLite list (reference)               %12.0f/s   %8.3f ms", rawListRate, 1000 / rawListRate))
    print(
        String(
            format: "list one namespace of %d devices          %12.0f/s   %8.3f ms   ratio %.2f", listed / lists, listRate, 1000 / listRate,
            listRate / rawListRate))
    print(
        String(
            format: "  per listing: raw %.1f µs wall, %.1f µs CPU; store %.1f µs wall, %.1f µs CPU (all threads)", rawListSeconds / Double(lists) * 1e6,
            rawListCPU / Double(lists) * 1e6, listElapsed / Double(lists) * 1e6, listCPU / Double(lists) * 1e6))
    if rawListed != listed || created == -1 || rawBytes == -1 { print("  (the reference listed \(rawListed) rows, the store \(listed))") }
    // What every store call pays to leave the Swift concurrency pool and come back (the rule:
    // no SQLite call on a cooperative thread), measured with an empty job on a worker thread.
    let workers = BlockingWorkers<Void>(name: "hapi-bench-hop", count: 1) { () }
    let hops = 20_000
    struct NoThread: Error {}
    let hopElapsed = await secondsAsync {
        for _ in 0..<hops { _ = try? await workers.run(unavailable: NoThread()) { (_: inout Void) throws(NoThread) -> Int in 0 } }
    }
    print(String(format: "  of which the thread round trip         %12.3f ms  (an empty job on a store thread)", hopElapsed / Double(hops) * 1000))
}

/// A raw libpq session: the reference the PostgreSQL store is measured against.
final class RawPostgres {
    let connection: OpaquePointer

    init?(url: String) {
        guard let connection = PQconnectdb(url), PQstatus(connection) == CONNECTION_OK else { return nil }
        self.connection = connection
    }

    deinit { PQfinish(connection) }

    func exec(_ sql: String) {
        PQclear(PQexec(connection, sql))
    }

    func prepare(_ name: String, _ sql: String) {
        PQclear(PQprepare(connection, name, sql, 0, nil))
    }

    /// Runs a prepared statement with text parameters; returns the result (caller clears).
    func run(_ name: String, _ parameters: [String?]) -> OpaquePointer? {
        let copies = parameters.map { $0.map { strdup($0) } ?? nil }
        defer { for copy in copies { free(copy) } }
        let pointers = copies.map { UnsafePointer<CChar>($0) }
        return PQexecPrepared(connection, name, Int32(parameters.count), pointers, nil, nil, 0)
    }
}

/// The same statements the store runs for one registration, one transaction each.
func rawPostgresUpserts(_ raw: RawPostgres, requests: ArraySlice<PushRegistrationRequest>) -> Double {
    seconds {
        for (i, request) in zip(requests.indices, requests) {
            raw.exec("BEGIN")
            PQclear(raw.run("evict", [request.token, request.namespace, request.deviceId, request.platform.rawValue]))
            PQclear(raw.run("upsert", [request.namespace, request.token, request.platform.rawValue, request.deviceId, request.pushKey?.base64, String(i)]))
            raw.exec("COMMIT")
        }
    }
}

func benchPostgres() async throws {
    print("\n== Device registry (PostgreSQL 15 on loopback, fsync off; store next to raw libpq, same statements) ==")
    let server = try await PostgresTestServer.start()
    defer { server.stop() }
    let key = try PushKey.generate().base64
    let count = 20_000
    func requests(_ prefix: String) throws -> [PushRegistrationRequest] {
        try (0..<count).map { i in
            try PushRegistrationRequest(
                namespace: "ns-\(i % 1000)", platform: i % 3 == 0 ? "ios" : "phone", deviceId: "\(prefix)-device-\(i)",
                token: i % 3 == 0 ? Digest.hex(Digest.sha256(Array("\(prefix)\(i)".utf8))) : "\(prefix)-fcm-token-\(i)",
                pushKey: i % 3 == 0 || i % 2 == 0 ? key : nil)
        }
    }
    let store = try await PostgresPushDeviceStore.open(configuration: try .init(url: server.url, tableName: "bench_devices"))
    _ = try await PostgresPushDeviceStore.open(configuration: try .init(url: server.url, tableName: "raw_devices"))  // same schema
    guard let raw = RawPostgres(url: server.url) else { throw CancellationError() }
    let t = "\"raw_devices\""
    raw.prepare("evict", "DELETE FROM \(t) WHERE token = $1 AND NOT (namespace = $2 AND device_id = $3 AND platform = $4)")
    raw.prepare(
        "upsert",
        "INSERT INTO \(t) (namespace, token, platform, device_id, push_key, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)"
            + " ON CONFLICT (namespace, device_id, platform) DO UPDATE SET token = EXCLUDED.token, push_key = EXCLUDED.push_key,"
            + " updated_at = EXCLUDED.updated_at RETURNING created_at")
    // Alternating chunks, so neither side gets the colder or the warmer server.
    let rawRequests = try requests("raw")
    let ours = try requests("store")
    var rawSeconds = 0.0
    var storeSeconds = 0.0
    for chunk in stride(from: 0, to: count, by: count / 4) {
        let range = chunk..<min(count, chunk + count / 4)
        let storeFirst = (chunk / (count / 4)) % 2 == 1
        if !storeFirst { rawSeconds += rawPostgresUpserts(raw, requests: rawRequests[range]) }
        storeSeconds += try await secondsAsync {
            for i in range { _ = try await store.upsert(ours[i], now: Int64(i)) }
        }
        if storeFirst { rawSeconds += rawPostgresUpserts(raw, requests: rawRequests[range]) }
    }
    let rawRate = Double(count) / rawSeconds
    let storeRate = Double(count) / storeSeconds
    print("raw libpq BEGIN+evict+upsert+COMMIT (reference) \(format(rawRate))")
    print("validated upsert + token dedup               \(format(storeRate))   ratio \(String(format: "%.2f", storeRate / rawRate))")

    // 100,000 rows in 1,000 namespaces (filled in bulk), then one namespace of 100 listed.
    try await server.psqlAsync(
        """
        TRUNCATE bench_devices;
        INSERT INTO bench_devices (namespace, token, platform, device_id, push_key, created_at, updated_at)
        SELECT 'ns-' || (i % 1000), CASE WHEN i % 3 = 0 THEN md5(i::text) || md5((i + 1)::text) ELSE 'fcm-token-' || i END,
               CASE WHEN i % 3 = 0 THEN 'ios' ELSE 'phone' END, 'device-' || i,
               CASE WHEN i % 3 = 0 OR i % 2 = 0 THEN '\(key)' END, i, i
        FROM generate_series(0, 99999) AS i;
        ANALYZE bench_devices;
        """)
    let lists = 2000
    raw.prepare("list", "SELECT device_id, platform, token, push_key, created_at, updated_at FROM bench_devices WHERE namespace = $1 ORDER BY updated_at DESC, id DESC")
    var rawRows = 0
    let rawListSeconds = seconds {
        for i in 0..<lists {
            guard let result = raw.run("list", ["ns-\(i % 1000)"]) else { continue }
            // Touch every value, as a decoder must.
            for row in 0..<PQntuples(result) {
                for column in 0..<Int32(6) where PQgetisnull(result, row, column) == 0 { rawRows &+= Int(PQgetlength(result, row, column)) }
            }
            PQclear(result)
        }
    }
    var listed = 0
    let listSeconds = try await secondsAsync {
        for i in 0..<lists { listed += try await store.devices(namespace: "ns-\(i % 1000)").count }
    }
    let rawListRate = Double(lists) / rawListSeconds
    let listRate = Double(lists) / listSeconds
    print(String(format: "raw libpq list (reference)                %12.0f/s   %8.3f ms", rawListRate, 1000 / rawListRate))
    print(String(format: "list %d devices among 100,000            %12.0f/s   %8.3f ms   ratio %.2f", listed / lists, listRate, 1000 / listRate, listRate / rawListRate))
    if rawRows == -1 { print("") }
}

/// The ceiling: h2load (nghttp2's load generator) POSTing the same body over one TLS
/// connection with `streams` concurrent streams to the same loopback server.
func h2loadRate(url: String, body: [UInt8], requests: Int, streams: Int) -> Double? {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-bench-body-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: file) }
    guard (try? Data(body).write(to: file)) != nil else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/h2load")
    process.arguments = ["-n", "\(requests)", "-c", "1", "-m", "\(streams)", "-d", file.path, "-H", "content-type: application/json", url]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    // "finished in 1.23s, 8123.45 req/s, ..."
    guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
        let rateField = line.split(separator: ",").dropFirst().first
    else { return nil }
    return Double(rateField.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
}

func benchHTTPClient() async throws {
    let server = try LoopbackServer { _ in .json(#"{"ok":true}"#) }
    defer { server.stop() }
    let body = [UInt8](repeating: UInt8(ascii: "a"), count: 4096)
    let url = server.baseURL + "/v1/push"
    print("\n== HTTP/2 client (4 KB POSTs, one TLS connection, 100 concurrent streams, loopback server) ==")
    let ceiling = h2loadRate(url: url, body: body, requests: 50_000, streams: 100)
    let client = try HTTPClient(configuration: .init(additionalTrustedCAFile: server.caCertificatePath, maximumConnectionsPerHost: 1, maximumConcurrentStreamsPerConnection: 100))
    let request = HTTPRequest(method: .post, url: url, headers: ["content-type": "application/json"], body: body)
    // HTTP_REQUESTS: more requests for a profile of the client alone (`perf record -p`).
    let count = benchKnob("HTTP_REQUESTS").map { max(1000, $0 / 1000 * 1000) } ?? 30_000
    _ = try await client.send(request)
    let elapsed = try await secondsAsync {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            while next < 100 { group.addTask { _ = try await client.send(request) }; next += 1 }
            while try await group.next() != nil, next < count {
                group.addTask { _ = try await client.send(request) }
                next += 1
            }
            try await group.waitForAll()
        }
    }
    // The same requests as batches (what the transports do): one submission per 1,000.
    let batchElapsed = await secondsAsync {
        for _ in 0..<(count / 1000) { _ = await client.send(Array(repeating: request, count: 1000)) }
    }
    await client.shutdown()
    let rate = Double(count) / elapsed
    let batchRate = Double(count) / batchElapsed
    if let ceiling {
        print("h2load (reference)                     \(format(ceiling))")
        print("HTTPClient.send, a task per request    \(format(rate))   ratio \(String(format: "%.2f", rate / ceiling))")
        print("HTTPClient.send, batches of 1,000      \(format(batchRate))   ratio \(String(format: "%.2f", batchRate / ceiling))")
    } else {
        print("HTTPClient.send                        \(format(rate))   (h2load unavailable: install nghttp2-client)")
    }
    print("connections used: \(server.connectionsAccepted - 1) for HTTPClient (h2load: 1)")
}

/// The HTTP client's 4 KB POSTs through tinyproxy (an http:// CONNECT proxy, one tunnel) next
/// to the same client direct and h2load direct, in the same run: the tunnel costs one CONNECT
/// per connection, and tinyproxy then copies bytes. Measured here: tinyproxy 1.11 adds ~40 ms to
/// every round trip through it (curl alone: ~50 ms per request through it, ~3 ms direct), so
/// the ratio says more about tinyproxy than about the client.
func benchProxy() async throws {
    let server = try LoopbackServer { _ in .json(#"{"ok":true}"#) }
    defer { server.stop() }
    let proxy = try Tinyproxy(connectPorts: [server.port])
    defer { proxy.stop() }
    let body = [UInt8](repeating: UInt8(ascii: "a"), count: 4096)
    let url = server.baseURL + "/v1/push"
    print("\n== HTTP/2 client through an egress proxy (tinyproxy, 4 KB POSTs, one connection, 100 streams) ==")
    let ceiling = h2loadRate(url: url, body: body, requests: 50_000, streams: 100)
    let request = HTTPRequest(method: .post, url: url, headers: ["content-type": "application/json"], body: body)
    let count = 30_000
    func rate(_ proxyURL: String) async throws -> Double {
        let client = try HTTPClient(
            configuration: .init(
                additionalTrustedCAFile: server.caCertificatePath, maximumConnectionsPerHost: 1, maximumConcurrentStreamsPerConnection: 100,
                proxy: HTTPProxyConfiguration(httpsProxy: proxyURL, environment: [:])))
        _ = try await client.send(request)
        let elapsed = await secondsAsync {
            for _ in 0..<(count / 1000) { _ = await client.send(Array(repeating: request, count: 1000)) }
        }
        await client.shutdown()
        return Double(count) / elapsed
    }
    let direct = try await rate("")
    let proxied = try await rate(proxy.url())
    if let ceiling { print("h2load direct (reference)              \(format(ceiling))") }
    print("HTTPClient direct, batches of 1,000    \(format(direct))")
    print("HTTPClient via tinyproxy               \(format(proxied))   ratio to direct \(String(format: "%.2f", proxied / direct))")
    print("CONNECTs seen by the proxy: \(proxy.connectTargets.count)")
}

/// An integer knob from the environment for profiling one section (`HTTP_REQUESTS`, …).
func benchKnob(_ name: String) -> Int? {
    ProcessInfo.processInfo.environment[name].flatMap(Int.init)
}

func secondsAsync(_ body: () async throws -> Void) async rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try await body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// Notifications per second to 1,000 iOS devices (seal + send + classify), over direct APNs
/// and over the relay, next to h2load POSTing the same request body to the same stand-in.
func benchDispatch() async throws {
    let providers = try LoopbackProviders()
    defer { providers.stop() }
    print("\n== Dispatch to 1,000 iOS devices (seal + send + classify), loopback stand-ins ==")
    let key = try PushKey.generate()
    let store = InMemoryPushDeviceStore()
    for i in 0..<max(1, benchKnob("BENCH_DEVICES") ?? 1000) {
        let token = Digest.hex(Digest.sha256(Array("device-\(i)".utf8)))
        _ = store.upsert(try PushRegistrationRequest(namespace: "bench", platform: "ios", deviceId: "d\(i)", token: token, pushKey: key.base64), now: Int64(i))
    }
    let payload = PushNotificationComposer.permissionRequest(
        for: PushSession(
            id: "0d5c1a9e-5f7e-4d8b-9a55-3f1f7d2c8b11", metadata: ["flavor": "claude", "name": "hapi"],
            agentState: ["requests": ["toolu_01HXYZ": ["tool": "Bash", "arguments": ["command": "swift test --parallel"]]]]))
    let envelope = try PushEnvelopeCipher.seal(payload.canonicalJSON, key: key)
    for (mode, server, sample) in [
        ("apns", providers.apns, Array(#"{"aps":{"mutable-content":1,"alert":{"title":"HAPI","body":"New activity"},"sound":"default"},"hapi":{"v":1,"e":"\#(envelope)"}}"#.utf8)),
        ("relay", providers.relay, Array(#"{"platform":"ios","token":"\#(String(repeating: "a", count: 64))","envelope":"\#(envelope)","collapseId":"permission-request-x","priority":10}"#.utf8)),
    ] {
        let directory = providers.directory + "/bench-\(mode)"
        let environment = providers.environment(iosMode: mode, androidMode: "off", dataDirectory: directory)
        let configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: false)
        var runtime = NativePush.Configuration()
        if let value = benchKnob("BENCH_CONCURRENCY") {
            runtime.concurrency.apns = value
            runtime.concurrency.relay = value
        }
        let push = try NativePush(configuration: configuration, store: store, runtime: runtime)
        _ = try await push.dispatch(payload, namespace: "bench")  // warm: connection and token
        // DISPATCH_ROUNDS: more rounds for a profile of the dispatch alone (`perf record -p`).
        let rounds = benchKnob("DISPATCH_ROUNDS").map { max(1, $0) } ?? 10
        var sent = 0
        let elapsed = try await secondsAsync {
            for _ in 0..<rounds { sent += try await push.dispatch(payload, namespace: "bench").count(.sent) }
        }
        await push.shutdown()
        let rate = Double(sent) / elapsed
        let ceiling = h2loadRate(url: server.baseURL + (mode == "apns" ? "/3/device/" + String(repeating: "a", count: 64) : "/v1/push"), body: sample, requests: 20_000, streams: 100)
        let label = mode == "apns" ? "direct APNs" : "relay      "
        if let ceiling {
            print("\(label): \(format(rate)) notifications   h2load \(format(ceiling))   ratio \(String(format: "%.2f", rate / ceiling))")
        } else {
            print("\(label): \(format(rate)) notifications")
        }
    }
}

/// Peak resident memory of one child process, in bytes, and its exit status. Measured by GNU
/// time (its getrusage of the child), not from here: a child forked from this large process
/// would count this process's pages in its high-water mark.
func peakResidentBytes(_ executable: String, _ arguments: [String], environment: [String: String]) -> (Int, Int32)? {
    let report = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-bench-rss-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: report) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/time")
    process.arguments = ["-f", "%M", "-o", report, executable] + arguments
    process.environment = environment
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    process.waitUntilExit()
    guard let text = try? String(contentsOfFile: report, encoding: .utf8),
        let kilobytes = text.split(separator: "\n").last.flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) })
    else { return nil }
    return (kilobytes * 1024, process.terminationStatus)
}

/// One operator's `hapi-push send` to 10,000 iOS devices over direct APNs (loopback): its
/// peak RSS, next to `hapi-push config` (the process's floor) measured the same way.
func benchSendMemory() async throws {
    let providers = try LoopbackProviders()
    defer { providers.stop() }
    let directory = providers.directory + "/hub"
    let store = try SQLitePushDeviceStore(directory: directory)
    let key = try PushKey.generate().base64
    for i in 0..<10_000 {
        let token = Digest.hex(Digest.sha256(Array("rss-device-\(i)".utf8)))
        _ = try await (store as any PushDeviceStore).upsert(
            PushRegistrationRequest(namespace: "load", platform: "ios", deviceId: "d\(i)", token: token, pushKey: key), now: Int64(i))
    }
    var environment = ProcessInfo.processInfo.environment
    for (name, value) in providers.environment(iosMode: "apns", androidMode: "off", dataDirectory: directory) { environment[name] = value }
    let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("hapi-push").path
    print("\n== One hapi-push send to 10,000 iOS devices (direct APNs, loopback): peak resident memory ==")
    guard FileManager.default.isExecutableFile(atPath: binary) else {
        print("hapi-push not built beside the bench (make bench builds it)")
        return
    }
    let handledBefore = providers.apns.server.requestsHandled
    let started = DispatchTime.now().uptimeNanoseconds
    guard let (send, status) = peakResidentBytes(
        binary, ["send", "--namespace", "load", "--type", "ready", "--session-id", "s1", "--title", "Claude is ready", "--body", "Ready"],
        environment: environment),
        let (floor, _) = peakResidentBytes(binary, ["config", "--no-persist"], environment: environment)
    else {
        print("could not run hapi-push")
        return
    }
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
    let delivered = providers.apns.server.requestsHandled - handledBefore
    func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }
    print("hapi-push config (the process floor)   \(megabytes(floor))")
    print("hapi-push send, 10,000 devices         \(megabytes(send))   (+\(megabytes(send - floor)) over the floor; exit \(status), \(delivered) pushes received, \(String(format: "%.1f", elapsed)) s)")
}


/// One operator's `hapi-push send` to 10,000 iOS devices over direct APNs against Debian's
/// stock `nghttpd` (the whole process: start-up, registry read, sealing, sends, report), in
/// deliveries per second, next to h2load POSTing the same APNs request to the same nghttpd over
/// one TLS connection (the ceiling), measured in the same run.
func benchSendNghttpd() async throws {
    print("\n== hapi-push send to 10,000 iOS devices (direct APNs) against nghttpd: the whole process ==")
    let nghttpd = try StockNghttpd()
    defer { nghttpd.stop() }
    let providers = try LoopbackProviders()  // only for its throwaway APNs key and environment
    defer { providers.stop() }
    let directory = providers.directory + "/nghttpd-hub"
    let store = try SQLitePushDeviceStore(directory: directory)
    let key = try PushKey.generate()
    for i in 0..<10_000 {
        let token = Digest.hex(Digest.sha256(Array("nghttpd-device-\(i)".utf8)))
        _ = try await (store as any PushDeviceStore).upsert(
            PushRegistrationRequest(namespace: "load", platform: "ios", deviceId: "d\(i)", token: token, pushKey: key.base64), now: Int64(i))
    }
    var environment = ProcessInfo.processInfo.environment
    for (name, value) in providers.environment(iosMode: "apns", androidMode: "off", dataDirectory: directory) { environment[name] = value }
    environment["HAPI_APNS_ENDPOINT"] = nghttpd.baseURL
    environment["HAPI_PUSH_CA_FILE"] = nghttpd.caPath
    let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("hapi-push").path
    guard FileManager.default.isExecutableFile(atPath: binary) else {
        print("hapi-push not built beside the bench (make bench builds it)")
        return
    }
    func send(_ run: Int) -> (seconds: Double, status: Int32) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["send", "--namespace", "load", "--type", "ready", "--session-id", "s\(run)", "--title", "Claude is ready", "--body", "Ready"]
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let start = DispatchTime.now().uptimeNanoseconds
        guard (try? process.run()) != nil else { return (0, -1) }
        process.waitUntilExit()
        return (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, process.terminationStatus)
    }
    _ = send(0)  // warm: page cache, nghttpd
    let envelope = try PushEnvelopeCipher.seal(Array(#"{"type":"ready"}"#.utf8), key: key)
    let body = Array(#"{"aps":{"mutable-content":1,"alert":{"title":"HAPI","body":"New activity"},"sound":"default"},"hapi":{"v":1,"e":"\#(envelope)"}}"#.utf8)
    // Interleaved, best of each: on a shared machine (and nghttpd writes every upload to a
    // file) the two figures are only comparable when taken side by side.
    var runs: [(seconds: Double, status: Int32)] = []
    var ceilings: [Double] = []
    for round in 1...5 {
        runs.append(send(round))
        if let rate = h2loadRate(url: nghttpd.baseURL + "/3/device/" + String(repeating: "a", count: 64), body: body, requests: 10_000, streams: 100) {
            ceilings.append(rate)
        }
    }
    let best = runs.map(\.seconds).min() ?? 0
    let rate = best > 0 ? 10_000 / best : 0
    let ceiling = ceilings.max()
    print("hapi-push send, best of 5: \(String(format: "%.2f", best)) s (runs \(runs.map { String(format: "%.2f", $0.seconds) }.joined(separator: " ")); exit \(runs.map(\.status))); h2load runs \(ceilings.map { String(format: "%.0f", $0) }.joined(separator: " "))/s")
    if let ceiling {
        print("deliveries: \(format(rate))   h2load \(format(ceiling))   ratio \(String(format: "%.2f", rate / ceiling))")
    } else {
        print("deliveries: \(format(rate))")
    }
}

/// Runs h2load with `arguments` (the body from a temporary file) and returns its requests per
/// second and how many requests were answered 2xx.
func h2load(_ arguments: [String], body: [UInt8]) -> (rate: Double, ok: Int)? {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-bench-body-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: file) }
    guard (try? Data(body).write(to: file)) != nil else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/h2load")
    process.arguments = ["-d", file.path, "-H", "content-type: application/json"] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    let lines = output.split(separator: "\n")
    // "finished in 1.23s, 8123.45 req/s, ..." and "status codes: 20000 2xx, 0 3xx, 0 4xx, 0 5xx"
    guard let finished = lines.first(where: { $0.hasPrefix("finished in") }),
        let rateField = finished.split(separator: ",").dropFirst().first,
        let rate = Double(rateField.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
    else { return nil }
    let codes = lines.first { $0.hasPrefix("status codes:") }
    let ok = codes.flatMap { Int($0.dropFirst("status codes:".count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") } ?? 0
    return (rate, ok)
}

/// Pushes per second through the relay (HTTP/1.1 in: h2load --h1, 50 connections, one request
/// each at a time; HTTP/2 out to the loopback APNs stand-in over TLS), next to h2load POSTing the
/// relay's APNs request straight at the same stand-in with the same concurrency (one TLS
/// connection, 50 streams, as the relay's upstream connection carries at most 50 here): the
/// ceiling. The machine is shared, so the two alternate in short runs and the median of the
/// paired ratios is the figure.
func benchRelay() async throws {
    let providers = try LoopbackProviders()
    defer { providers.stop() }
    print("\n== Relay (hapi-push-relay: HTTP/1.1 in, 50 connections; HTTP/2 to the loopback APNs stand-in) ==")
    let configuration = try PushRelayConfiguration(environment: [
        "RELAY_HOST": "127.0.0.1", "RELAY_PORT": "0", "RELAY_CA_FILE": providers.caBundlePath,
        "RELAY_APNS_KEY_P8_PATH": providers.apnsKeyPath, "RELAY_APNS_KEY_ID": "DEMO123456", "RELAY_APNS_TEAM_ID": "TEAM123456",
        "RELAY_APNS_BUNDLE_ID": "run.hapi.app", "RELAY_APNS_ENDPOINT": providers.apns.baseURL,
    ])
    // One client and one token send everything: the limits are raised so every push is forwarded
    // (the limiter itself still runs on each one). Log lines are built, then discarded.
    let unlimited = PushRelayRateLimit(burst: 1 << 30, perMinute: 1 << 30)
    let server = try PushRelayServer(
        configuration: configuration, rateLimiter: InMemoryPushRelayRateLimiter(clientLimit: unlimited, deviceLimit: unlimited), log: { _ in })
    let token = String(repeating: "a", count: 64)
    let envelope = String(repeating: "A", count: 1400)
    let push = Array(#"{"platform":"ios","token":"\#(token)","envelope":"\#(envelope)","collapseId":"ready-s1","priority":10}"#.utf8)
    let apnsBody = Array(#"{"aps":{"mutable-content":1,"alert":{"title":"HAPI","body":"New activity"},"sound":"default"},"hapi":{"v":1,"e":"\#(envelope)"}}"#.utf8)
    let connections = 50
    let requests = 20_000
    let rounds = 3
    _ = h2load(["--h1", "-n", "200", "-c", "10", server.url + "/v1/push"], body: push)  // warm: APNs connection and token
    var pairs: [(relay: Double, ceiling: Double)] = []
    // CPU seconds per request (this process: relay and stand-in; plus h2load), which another
    // agent's load on the machine does not change as it changes rates.
    var cpu: [(relay: Double, ceiling: Double)] = []
    var answered = 0
    for _ in 0..<rounds {
        let before = cpuSeconds()
        let relay = h2load(["--h1", "-n", "\(requests)", "-c", "\(connections)", "-m", "1", server.url + "/v1/push"], body: push)
        let middle = cpuSeconds()
        let ceiling = h2load(["-n", "\(requests * 2)", "-c", "1", "-m", "\(connections)", providers.apns.baseURL + "/3/device/" + token], body: apnsBody)
        let after = cpuSeconds()
        cpu.append(((middle - before) / Double(requests), (after - middle) / Double(requests * 2)))
        guard let relay, let ceiling else {
            await server.stop()
            print("relay: h2load unavailable (install nghttp2-client)")
            return
        }
        pairs.append((relay.rate, ceiling.rate))
        answered += relay.ok
    }
    await server.stop()
    for (round, pair) in pairs.enumerated() {
        print("round \(round + 1): h2load straight to the APNs stand-in \(format(pair.ceiling))   through hapi-push-relay \(format(pair.relay))   ratio \(String(format: "%.2f", pair.relay / pair.ceiling))")
    }
    let ratios = pairs.map { $0.relay / $0.ceiling }.sorted()
    let relays = pairs.map(\.relay).sorted()
    print("through hapi-push-relay (median)                 \(format(relays[relays.count / 2]))   ratio \(String(format: "%.2f", ratios[ratios.count / 2])) (median of \(rounds) paired runs)")
    let costs = cpu.map { $0.ceiling / $0.relay }.sorted()
    let perPush = cpu.map(\.relay).sorted()[cpu.count / 2]
    print("CPU per push through the relay \(String(format: "%.1f", perPush * 1e6)) µs (relay, stand-in and h2load); CPU ratio to the reference \(String(format: "%.2f", costs[costs.count / 2])) (median)")
    print("answered 200: \(answered) of \(requests * rounds); APNs requests seen: \(providers.apns.requests.count); TLS connections the stand-in accepted: \(providers.apns.server.connectionsAccepted) (the relay's and each h2load run's)")
}

/// CPU seconds (user and system) used so far by this process and its waited-for children.
func cpuSeconds() -> Double {
    var total = 0.0
    for who in [RUSAGE_SELF, RUSAGE_CHILDREN] {
        var usage = rusage()
        getrusage(__rusage_who_t(who.rawValue), &usage)
        total += Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
    return total
}


/// Runs `body` on a thread of its own (it blocks) and returns its result.
func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}

/// The relay as operators run it (its own process, release build, default limits) under the
/// issue's loads: 10,000 hubs on kept-alive connections, then the slow-client attack from one
/// address and from eight. Loopback only; each phase bounded in connections and seconds.
func benchRelayLoad() async throws {
    let descriptors = PushRelayServer.raiseDescriptorLimit() ?? 0
    print("\n== Relay under load (hapi-push-relay process, default limits; loopback; descriptors \(descriptors)) ==")
    guard descriptors >= 10_600 else {
        print("relayload: needs RLIMIT_NOFILE >= 10600 in this process (hard limit \(descriptors)): skipped")
        return
    }
    let providers = try LoopbackProviders()
    defer { providers.stop() }
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent("hapi-push-relay")
    let logFile = providers.directory + "/relay.log"
    _ = FileManager.default.createFile(atPath: logFile, contents: nil)
    let process = Process()
    process.executableURL = executable
    process.environment = [
        "RELAY_HOST": "127.0.0.1", "RELAY_PORT": "0", "RELAY_CA_FILE": providers.caBundlePath,
        "RELAY_APNS_KEY_P8_PATH": providers.apnsKeyPath, "RELAY_APNS_KEY_ID": "DEMO123456", "RELAY_APNS_TEAM_ID": "TEAM123456",
        "RELAY_APNS_BUNDLE_ID": "run.hapi.app", "RELAY_APNS_ENDPOINT": providers.apns.baseURL,
    ]
    process.standardOutput = FileHandle(forWritingAtPath: logFile)
    process.standardError = FileHandle(forWritingAtPath: logFile)
    try process.run()
    defer { if process.isRunning { process.terminate() } }
    var port = 0
    for _ in 0..<200 {
        let text = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        if let range = text.range(of: "listening on http://127.0.0.1:") {
            port = Int(text[range.upperBound...].prefix { $0.isNumber }) ?? 0
            break
        }
        try await Task.sleep(for: .milliseconds(50))
    }
    guard port > 0 else {
        print("relayload: the relay did not start: \((try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "")")
        return
    }
    let limits = ((try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "").split(separator: "\n").first { $0.hasPrefix("connections:") }
    print("relay: \(limits ?? "")")
    let pid = process.processIdentifier
    func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }
    func statuses(_ counts: [Int: Int]) -> String { counts.sorted { $0.key < $1.key }.map { "\($0.value)x\($0.key)" }.joined(separator: " ") }

    // 1. 10,000 hubs: 200 addresses x 50 kept-alive connections, each pushing every 15 s, held 30 s.
    let hubs = HubLoad(port: port, sources: (1...200).map { "127.0.1.\($0)" }, perSource: 50, intervalMilliseconds: 15_000, seconds: 30)
    let probe = HealthProbe()
    let peak = Locked(0)
    let sampling = Locked(true)
    Thread.detachNewThread {
        while sampling.withLock({ $0 }) {
            let rss = residentBytes(pid: pid)
            peak.withLock { $0 = max($0, rss) }
            usleep(250_000)
        }
    }
    probe.start(port: port, everyMilliseconds: 20)
    let load = await onThread { hubs.run() }
    let (health, healthFailures) = probe.stop()
    sampling.withLock { $0 = false }
    usleep(300_000)
    let rss = peak.withLock { $0 }
    print("10,000 hubs: \(load.connected) connected in \(String(format: "%.1f", load.connectSeconds)) s, \(load.heldAtEnd) still open after 30 s")
    print("  pushes: \(load.sent) sent, answered \(statuses(load.statuses)), unanswered \(load.unanswered), connections dropped \(load.dropped); push \(load.latency.summary)")
    print("  relay RSS peak \(megabytes(rss)) (goal < 256 MB: \(rss < 256_000_000 ? "met" : "NOT met"))")
    print("  /health on fresh connections meanwhile: \(health.summary), failures \(healthFailures) (goal p99 < 50 ms: \(health.percentile(0.99) < 50 ? "met" : "NOT met"))")
    try await Task.sleep(for: .seconds(2))

    // 2 and 3. The slow-client attack (1,100 connections, a header byte every 5 s) from one
    // address, then from eight; meanwhile 100 other hub connections push 100 a second.
    for (label, attackers) in [("one address", ["127.0.0.200"]), ("8 addresses", (200..<208).map { "127.0.0.\($0)" })] {
        let slow = SlowClients()
        slow.start(port: port, sources: attackers, count: 1100 / attackers.count, dripSeconds: 5)
        try await Task.sleep(for: .seconds(2))
        let others = HubLoad(
            port: port, sources: (1...20).map { "127.0.2.\($0 + (label == "one address" ? 0 : 100))" }, perSource: 5, intervalMilliseconds: 1000,
            seconds: 25, tokenPerPush: true)
        let probe = HealthProbe()
        probe.start(port: port, everyMilliseconds: 20)
        let load = await onThread { others.run() }
        let (health, failures) = probe.stop()
        let attack = slow.stop()
        let p99 = max(health.percentile(0.99), load.latency.percentile(0.99))
        print("slow-client attack from \(label): \(attack.opened) connections opened, at most \(attack.mostHeld) held at once")
        print("  other hubs' pushes: \(load.sent) sent, answered \(statuses(load.statuses)), unanswered \(load.unanswered); \(load.latency.summary)")
        print("  /health meanwhile: \(health.summary), failures \(failures) (goal p99 < 100 ms for both: \(p99 < 100 ? "met" : "NOT met"))")
        try await Task.sleep(for: .seconds(1))
    }
    process.terminate()
    process.waitUntilExit()
}

/// `hapi-push-bench [envelope] [registry] [postgres] [http] [dispatch] [send] [nghttpd] [relay] [relayload] [proxy] [webpush]`: all sections by default.
let sections = Set(CommandLine.arguments.dropFirst())
func wanted(_ name: String) -> Bool { sections.isEmpty || sections.contains(name) }

do {
    if wanted("envelope") { try benchEnvelope() }
    if wanted("registry") { try await benchRegistry() }
    if wanted("postgres") { try await benchPostgres() }
    if wanted("http") { try await benchHTTPClient() }
    if wanted("dispatch") { try await benchDispatch() }
    if wanted("send") { try await benchSendMemory() }
    if wanted("nghttpd") { try await benchSendNghttpd() }
    if wanted("relay") { try await benchRelay() }
    if wanted("relayload") { try await benchRelayLoad() }
    if wanted("proxy") { try await benchProxy() }
    if wanted("webpush") { try await benchWebPush() }
} catch {
    FileHandle.standardError.write(Data("bench failed: \(error)\n".utf8))
    exit(1)
}
