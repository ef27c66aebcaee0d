import Foundation
import PushEnvelope
import PushSync
import Testing
import PushPlatform

@testable import PushRelay

/// A limiter configuration for `server` with the relay's own timeouts and a short backoff cap,
/// so a test sees a recovery within a fraction of a second.
func redisConfiguration(_ server: RedisTestServer, url: String? = nil, adjust: (inout PushRelayRedisConfiguration) -> Void = { _ in }) throws
    -> PushRelayRedisConfiguration
{
    var configuration = try PushRelayRedisConfiguration(url: url ?? server.url, caFile: server.caPath)
    configuration.maximumBackoff = .milliseconds(200)
    adjust(&configuration)
    return configuration
}

/// A device digest as the relay computes it (64 hex digits).
func deviceDigest(_ index: Int) -> String { Digest.hex(Digest.sha256(Array("ios:device-\(index)".utf8))) }

/// The value of an unlabelled Prometheus sample in `text`.
func metric(_ text: String, _ name: String) -> Double? {
    for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
        return Double(line.dropFirst(name.count + 1))
    }
    return nil
}

/// Polls `condition` every 10 ms for up to `seconds`.
func eventually(seconds: Double = 10, _ condition: () throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try condition()
}

/// The Lua token buckets against a real redis-server: the in-memory limiter's semantics and
/// numbers, Redis's clock, keys that expire when full, the script reloaded after a flush, and
/// one budget however many limiters (relay instances) share it.
@Suite struct RedisLimiterTests {
    @Test func decidesExactlyAsTheInMemoryLimiter() async throws {
        let redis = try RedisTestServer()
        // Refill so slow (one token a minute) that the test's own duration cannot matter.
        let client = PushRelayRateLimit(burst: 6, perMinute: 1)
        let device = PushRelayRateLimit(burst: 3, perMinute: 1)
        let shared = RedisPushRelayRateLimiter(configuration: try redisConfiguration(redis), clientLimit: client, deviceLimit: device)
        let clock = ManualClock()
        let memory = InMemoryPushRelayRateLimiter(clientLimit: client, deviceLimit: device, now: clock.now)
        #expect(await shared.firstConnection() == nil)
        var generator = SplitMix(seed: 16)
        var outcomes: [PushRelayAdmission: Int] = [:]
        for step in 0..<400 {
            let ip = "10.0.0.\(generator.next() % 5)"
            let token = deviceDigest(Int(generator.next() % 8))
            let expected = memory.admitNow(client: ip, device: token)
            let got = await shared.admit(client: ip, device: token)
            #expect(got == expected, "step \(step): \(ip) \(token.prefix(8))")
            outcomes[got, default: 0] += 1
        }
        // Every kind of answer happened, all of them in Redis.
        #expect(outcomes[.admitted, default: 0] > 0 && outcomes[.clientLimited, default: 0] > 0 && outcomes[.deviceLimited, default: 0] > 0)
        let status = shared.status
        #expect(status.isConnected && !status.isDegraded && status.errors == 0 && status.localDecisions == 0)
        await shared.shutdown()
    }

    @Test func theClientIsCheckedFirstAndARefusalCostsTheDeviceNothing() async throws {
        let redis = try RedisTestServer()
        let limiter = RedisPushRelayRateLimiter(
            configuration: try redisConfiguration(redis), clientLimit: PushRelayRateLimit(burst: 1, perMinute: 1),
            deviceLimit: PushRelayRateLimit(burst: 1, perMinute: 1))
        #expect(await limiter.firstConnection() == nil)
        let d1 = deviceDigest(1)
        let d2 = deviceDigest(2)
        #expect(await limiter.admit(client: "a", device: d1) == .admitted)
        #expect(await limiter.admit(client: "a", device: d2) == .clientLimited)
        // a's refusal did not touch d2's bucket: it was never even created.
        #expect(try redis.cli("EXISTS", String(decoding: limiter.deviceKey(d2), as: UTF8.self)) == "0")
        #expect(await limiter.admit(client: "b", device: d2) == .admitted)
        #expect(await limiter.admit(client: "c", device: d2) == .deviceLimited)
        // c's token was spent even though the device refused (the IP is checked first).
        #expect(await limiter.admit(client: "c", device: deviceDigest(3)) == .clientLimited)
        await limiter.shutdown()
    }

    @Test func bucketsRefillOnRedisTime() async throws {
        let redis = try RedisTestServer()
        // Two a second: one token back every 500 ms.
        let limiter = RedisPushRelayRateLimiter(configuration: try redisConfiguration(redis), deviceLimit: PushRelayRateLimit(burst: 2, perMinute: 120))
        #expect(await limiter.firstConnection() == nil)
        let device = deviceDigest(7)
        #expect(await limiter.admit(client: "ip", device: device) == .admitted)
        #expect(await limiter.admit(client: "ip", device: device) == .admitted)
        #expect(await limiter.admit(client: "ip", device: device) == .deviceLimited)
        try await Task.sleep(for: .milliseconds(600))
        #expect(await limiter.admit(client: "ip", device: device) == .admitted)
        #expect(await limiter.admit(client: "ip", device: device) == .deviceLimited)
        await limiter.shutdown()
    }

    @Test func eachKeyExpiresWhenItsBucketWouldBeFullAgain() async throws {
        let redis = try RedisTestServer()
        let limiter = RedisPushRelayRateLimiter(
            configuration: try redisConfiguration(redis), clientLimit: PushRelayRateLimit(burst: 10, perMinute: 600),
            deviceLimit: PushRelayRateLimit(burst: 2, perMinute: 60))
        #expect(await limiter.firstConnection() == nil)
        let device = deviceDigest(1)
        let ip = "203.0.113.9"
        let deviceKey = String(decoding: limiter.deviceKey(device), as: UTF8.self)
        let clientKey = String(decoding: limiter.clientKey(ip), as: UTF8.self)
        #expect(await limiter.admit(client: ip, device: device) == .admitted)
        // One token short: full again in a second (device), in 100 ms (client, ten a second).
        let firstTTL = try #require(Int(redis.cli("PTTL", deviceKey)))
        #expect((1...1000).contains(firstTTL), "\(firstTTL)")
        let clientTTL = try #require(Int(redis.cli("PTTL", clientKey)))
        #expect((1...100).contains(clientTTL), "\(clientTTL)")
        #expect(await limiter.admit(client: ip, device: device) == .admitted)
        let secondTTL = try #require(Int(redis.cli("PTTL", deviceKey)))
        #expect((1001...2000).contains(secondTTL), "\(secondTTL)")
        // Two keys, named by digests: neither the address nor a token is stored.
        let keys = try redis.keys()
        #expect(keys == [clientKey, deviceKey].sorted())
        #expect(clientKey == "hapi-push-relay:client:" + Digest.hex(Digest.sha256(Array(ip.utf8))))
        #expect(deviceKey == "hapi-push-relay:device:" + device)
        #expect(!keys.joined().contains(ip))
        await limiter.shutdown()

        // Buckets that refill in milliseconds vanish in milliseconds.
        let fast = RedisPushRelayRateLimiter(
            configuration: try redisConfiguration(redis) { $0.keyPrefix = "fast:" }, clientLimit: PushRelayRateLimit(burst: 1, perMinute: 60_000),
            deviceLimit: PushRelayRateLimit(burst: 1, perMinute: 60_000))
        #expect(await fast.firstConnection() == nil)
        #expect(await fast.admit(client: ip, device: device) == .admitted)
        try await Task.sleep(for: .milliseconds(50))
        #expect(try redis.cli("EXISTS", String(decoding: fast.deviceKey(device), as: UTF8.self)) == "0")
        #expect(try redis.cli("EXISTS", String(decoding: fast.clientKey(ip), as: UTF8.self)) == "0")
        await fast.shutdown()
    }

    @Test func memoryStaysBoundedEveryKeyHasAnExpiry() async throws {
        let redis = try RedisTestServer()
        let limiter = RedisPushRelayRateLimiter(configuration: try redisConfiguration(redis), clientLimit: PushRelayRateLimit(burst: 5000, perMinute: 5000))
        #expect(await limiter.firstConnection() == nil)
        // 2,000 devices from 20 addresses, concurrently: batched into pipelines.
        let admitted = await withTaskGroup(of: PushRelayAdmission.self) { group in
            for index in 0..<2000 {
                group.addTask { await limiter.admit(client: "10.1.0.\(index % 20)", device: deviceDigest(index)) }
            }
            var count = 0
            for await admission in group where admission == .admitted { count += 1 }
            return count
        }
        #expect(admitted == 2000)
        #expect(limiter.status.localDecisions == 0)
        #expect(try redis.cli("DBSIZE") == "2020")
        // No key without an expiry (PTTL -1): Redis forgets every bucket within its refill time.
        let persistent = try redis.cli(
            "EVAL", "local n = 0 for _, k in ipairs(redis.call('KEYS', '*')) do if redis.call('PTTL', k) < 0 then n = n + 1 end end return n", "0")
        #expect(persistent == "0")
        let maximum = try #require(Int(redis.cli(
            "EVAL", "local m = 0 for _, k in ipairs(redis.call('KEYS', '*device*')) do m = math.max(m, redis.call('PTTL', k)) end return m", "0")))
        #expect(maximum <= 2000, "one push from full is two seconds at 30 a minute")
        let bytes = try #require(Int(redis.cli("MEMORY", "USAGE", String(decoding: limiter.deviceKey(deviceDigest(0)), as: UTF8.self))))
        #expect(bytes < 400, "a bucket costs \(bytes) bytes")
        await limiter.shutdown()
    }

    @Test func aFlushedScriptIsLoadedAgain() async throws {
        let redis = try RedisTestServer()
        let limiter = RedisPushRelayRateLimiter(configuration: try redisConfiguration(redis), deviceLimit: PushRelayRateLimit(burst: 3, perMinute: 1))
        #expect(await limiter.firstConnection() == nil)
        let device = deviceDigest(5)
        #expect(await limiter.admit(client: "ip", device: device) == .admitted)
        #expect(try redis.cli("SCRIPT", "FLUSH") == "OK")
        #expect(await limiter.admit(client: "ip", device: device) == .admitted)
        #expect(await limiter.admit(client: "ip", device: device) == .admitted)
        #expect(await limiter.admit(client: "ip", device: device) == .deviceLimited)
        // NOSCRIPT was answered by loading the script again: nothing was decided locally.
        let status = limiter.status
        #expect(status.errors == 0 && status.localDecisions == 0 && !status.isDegraded)
        await limiter.shutdown()
    }

    @Test func severalLimitersOnOneRedisShareOneBudget() async throws {
        let redis = try RedisTestServer()
        let device = PushRelayRateLimit(burst: 30, perMinute: 1)
        let instances = try (0..<3).map { _ in
            RedisPushRelayRateLimiter(configuration: try redisConfiguration(redis), deviceLimit: device)
        }
        for instance in instances { #expect(await instance.firstConnection() == nil) }
        // 150 pushes for one token at once, 50 through each instance: exactly 30 get through.
        let token = deviceDigest(42)
        let results = await withTaskGroup(of: PushRelayAdmission.self) { group in
            for index in 0..<150 {
                let instance = instances[index % 3]
                group.addTask { await instance.admit(client: "10.2.0.\(index % 7)", device: token) }
            }
            var results: [PushRelayAdmission: Int] = [:]
            for await admission in group { results[admission, default: 0] += 1 }
            return results
        }
        #expect(results[.admitted] == 30)
        #expect(results[.deviceLimited] == 120)
        for instance in instances {
            #expect(instance.status.localDecisions == 0)
            await instance.shutdown()
        }
    }

    @Test func aPrimaryTurnedReplicaIsLeftUntilItIsAPrimaryAgain() async throws {
        let primary = try RedisTestServer()
        let redis = try RedisTestServer()
        let limiter = RedisPushRelayRateLimiter(configuration: try redisConfiguration(redis), deviceLimit: PushRelayRateLimit(burst: 3, perMinute: 1))
        #expect(await limiter.firstConnection() == nil)
        #expect(await limiter.admit(client: "ip", device: deviceDigest(1)) == .admitted)
        // A fail-over demotes it: the script's writes get READONLY. Decided locally, the
        // connection dropped and made again, not a stream of errors on a dead end.
        #expect(try redis.cli("REPLICAOF", "127.0.0.1", String(primary.port)) == "OK")
        #expect(await limiter.admit(client: "ip", device: deviceDigest(2)) == .admitted)
        #expect(limiter.status.isDegraded && limiter.status.localDecisions == 1)
        #expect(limiter.status.lastError?.contains("READONLY") == true, "\(limiter.status.lastError ?? "")")
        // Still a replica: a new connection (which it accepts) does not end the degradation.
        #expect(await limiter.admit(client: "ip", device: deviceDigest(4)) == .admitted)
        #expect(limiter.status.isDegraded, "\(limiter.status)")
        #expect(try redis.cli("REPLICAOF", "NO", "ONE") == "OK")
        // Back when Redis decides again (the promoted server holds the primary's empty data
        // set), after the backoff that follows each refused script.
        var decidedInRedis = false
        for _ in 0..<100 where !decidedInRedis {
            let before = limiter.status.localDecisions
            _ = await limiter.admit(client: "ip", device: deviceDigest(3))
            decidedInRedis = limiter.status.localDecisions == before
            if !decidedInRedis { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(decidedInRedis)
        #expect(!limiter.status.isDegraded && limiter.status.isConnected, "\(limiter.status)")
        #expect(try redis.cli("EXISTS", String(decoding: limiter.deviceKey(deviceDigest(3)), as: UTF8.self)) == "1")
        await limiter.shutdown()
    }

    @Test func anEndlessReplyIsCutOffNotBuffered() async throws {
        // Not Redis: a listener that answers any command with a gigabyte bulk string and
        // streams it until the client hangs up (a misconfigured port, a hostile peer).
        let server = try EndlessReplyServer()
        defer { server.stop() }
        let limiter = RedisPushRelayRateLimiter(configuration: try PushRelayRedisConfiguration(url: "redis://127.0.0.1:\(server.port)"))
        let problem = await limiter.firstConnection()
        #expect(problem?.kind == .unavailable)
        #expect(problem?.message == "a reply larger than \(RedisTLSLink.maximumBufferedBytes) bytes", "\(problem?.message ?? "")")
        #expect(await limiter.admit(client: "ip", device: deviceDigest(1)) == .admitted)
        #expect(limiter.status.isDegraded)
        await limiter.shutdown()
        #expect(server.bytesSent < 64 << 20, "sent \(server.bytesSent)")
    }

    @Test func aShutDownLimiterDecidesInMemory() async throws {
        let redis = try RedisTestServer()
        let limiter = RedisPushRelayRateLimiter(configuration: try redisConfiguration(redis), deviceLimit: PushRelayRateLimit(burst: 1, perMinute: 1))
        #expect(await limiter.firstConnection() == nil)
        await limiter.shutdown()
        #expect(await limiter.admit(client: "ip", device: deviceDigest(1)) == .admitted)
        #expect(await limiter.admit(client: "ip", device: deviceDigest(1)) == .deviceLimited)
        #expect(limiter.status.localDecisions == 2)
        #expect(try redis.cli("DBSIZE") == "0")
    }
}

/// A small deterministic generator (SplitMix64) for reproducible sequences.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A TCP listener on 127.0.0.1 that answers every connection with the header of a 1 GB bulk
/// string and then streams bytes until the peer closes (sent with MSG_NOSIGNAL).
final class EndlessReplyServer: @unchecked Sendable {
    // @unchecked: `sent` and `stopping` are locked; the descriptor is immutable.
    let port: Int
    private let listener: Int32
    private let sent = Locked(0)
    private let stopping = Locked(false)
    private let finished = DispatchSemaphore(value: 0)

    init() throws {
        listener = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false, closeOnExec: false)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listener = listener
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 && listen(listener, 8) == 0
            }
        }
        guard ok else {
            close(listener)
            throw RedisTestServer.StartError(description: "cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    var bytesSent: Int { sent.withLock { $0 } }

    private func serve() {
        defer { finished.signal() }
        let header = Array("$1000000000\r\n".utf8)
        let chunk = [UInt8](repeating: 0x78, count: 64 * 1024)
        while !stopping.withLock({ $0 }) {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            var request = [UInt8](repeating: 0, count: 4096)
            _ = recv(client, &request, request.count, 0)
            var payload = header
            while !stopping.withLock({ $0 }) {
                let rc = payload.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) }
                guard rc > 0 else { break }
                sent.withLock { $0 += rc }
                payload = chunk
            }
            close(client)
        }
    }

    func stop() {
        stopping.withLock { $0 = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        _ = finished.wait(timeout: .now() + 5)
    }
}
