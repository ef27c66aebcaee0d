import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushEnvelope
import PushHTTP
import PushLoopbackServer
import PushSync
import PushTestSupport
import PushTransports
import Testing

@testable import PushRelay

/// Relay instances sharing one real Redis (`RELAY_REDIS_URL`): one budget per token and per IP
/// whichever instance a push reaches, and fail-open when Redis goes away (limits decided in
/// memory, said in the log and the metrics, shared again once Redis is back).
@Suite struct RedisRelayTests {
    /// The Redis key of an iOS token's bucket.
    static func deviceKey(_ token: String) -> String {
        PushRelayRedisConfiguration.defaultKeyPrefix + "device:" + RelayPush.deviceKey(platform: .ios, token: token)
    }

    /// Refill at the spec's 30 a minute is one token per 2 s: a push later than that after the
    /// burst is admitted by the bucket's own rule. The tests' bursts take a fraction of a
    /// second; on a machine slow enough to take longer, they allow what refilled meanwhile.
    static let refillInterval = Duration.seconds(2)

    /// `count` pushes for `token` at once, spread over `relays` in turn; their statuses.
    static func burst(_ relays: [RelayFixture], count: Int, token: String = mixedCaseToken) async throws -> [Int] {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<count {
                let relay = relays[index % relays.count]
                group.addTask { try await relay.push(iosPush(token: token)).status }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    @Test func the31stPushForATokenIsRefusedWhicheverInstanceGetsIt() async throws {
        let redis = try RedisTestServer()
        let a = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": redis.url])
        let b = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": redis.url])
        // The spec's numbers: burst 30, spent at once over both instances.
        let clock = ContinuousClock()
        let started = clock.now
        let first = try await Self.burst([a, b], count: 30)
        #expect(first == [Int](repeating: 200, count: 30), "\(first)")
        let onA = try await a.push(iosPush())
        let onB = try await b.push(iosPush())
        let elapsed = clock.now - started
        if elapsed < Self.refillInterval {
            #expect(onA.status == 429 && onB.status == 429)
            #expect(onA.text == #"{"ok":false,"code":"rate_limited"}"#)
        } else {
            // Slow machine: at most one token per 2 s came back.
            let extra = [onA.status, onB.status].filter { $0 == 200 }.count
            #expect(extra <= Int(elapsed / Self.refillInterval), "after \(elapsed): \(onA.status) \(onB.status)")
        }
        // Another token is unaffected, on either.
        #expect(try await a.push(iosPush(token: iosToken(9))).status == 200)
        #expect(try await b.push(iosPush(token: iosToken(9))).status == 200)
        let admittedForToken = a.apnsRequests.count + b.apnsRequests.count - 2
        let left = try #require(Double(redis.cli("HGET", Self.deviceKey(mixedCaseToken), "tokens")))
        #expect(left < 1)
        let metrics = a.server.metricsText + b.server.metricsText
        await a.stop()
        await b.stop()
        let refusals = (a.log.pushLines + b.log.pushLines).filter { $0.contains("limit=device") }.count
        #expect(refusals == 32 - admittedForToken)
        if elapsed < Self.refillInterval {
            #expect(a.log.pushLines.filter { $0.contains("limit=device") }.count == 1)
            #expect(b.log.pushLines.filter { $0.contains("limit=device") }.count == 1)
        }
        #expect(a.log.all.contains { $0.hasPrefix("rate limits: shared in redis://127.0.0.1:\(redis.port)/0") })
        #expect(metrics.contains("hapi_push_relay_rate_limiter_degraded 0"))
        #expect(metrics.contains("hapi_push_relay_rate_limiter_local_decisions_total 0"))
        #expect(metrics.contains("hapi_push_relay_redis_errors_total 0"))
    }

    @Test func duringAnOutageEachInstanceLimitsAloneThenTheyShareAgain() async throws {
        let redis = try RedisTestServer()
        let adjust: (inout PushRelayConfiguration) -> Void = { $0.redis?.maximumBackoff = .milliseconds(200) }
        let a = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": redis.url], adjust: adjust)
        let b = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": redis.url], adjust: adjust)
        #expect(try await Self.burst([a, b], count: 4) == [200, 200, 200, 200])

        redis.stop()
        // Fail-open, as documented: each instance keeps the spec's budget in its own memory,
        // so one token gets up to 30 pushes per instance while Redis is away, never more.
        let token = iosToken(31)
        let clock = ContinuousClock()
        let started = clock.now
        let down = try await Self.burst([a, b], count: 64, token: token)
        let elapsed = clock.now - started
        let admitted = down.filter { $0 == 200 }.count
        #expect(down.allSatisfy { $0 == 200 || $0 == 429 }, "\(down)")
        #expect(admitted >= 60 && admitted <= 60 + 2 * Int(elapsed / Self.refillInterval), "admitted \(admitted) of 64 in \(elapsed)")
        for relay in [a, b] {
            let text = relay.server.metricsText
            #expect(metric(text, "hapi_push_relay_rate_limiter_degraded") == 1)
            #expect(metric(text, "hapi_push_relay_rate_limiter_local_decisions_total") == 32)
            #expect(relay.log.all.contains { $0.contains("unavailable (") && $0.hasSuffix("limiting in this process until it is back") })
        }

        try redis.startAgain()
        for relay in [a, b] {
            #expect(await eventually { metric(relay.server.metricsText, "hapi_push_relay_redis_connected") == 1 })
        }
        // One budget again (Redis restarted empty: the token's shared bucket starts full).
        let fresh = iosToken(32)
        let again = try await Self.burst([a, b], count: 30, token: fresh)
        #expect(again == [Int](repeating: 200, count: 30), "\(again)")
        let startedAgain = clock.now
        let last = [try await a.push(iosPush(token: fresh)).status, try await b.push(iosPush(token: fresh)).status]
        if clock.now - startedAgain < Self.refillInterval { #expect(last == [429, 429]) }
        #expect(try redis.cli("EXISTS", Self.deviceKey(fresh)) == "1")
        for relay in [a, b] {
            #expect(metric(relay.server.metricsText, "hapi_push_relay_rate_limiter_degraded") == 0)
            #expect(metric(relay.server.metricsText, "hapi_push_relay_rate_limiter_local_decisions_total") == 32)
        }
        await a.stop()
        await b.stop()
    }

    @Test func theClientBudgetIsSharedAcrossInstances() async throws {
        let redis = try RedisTestServer()
        let small = PushRelayRateLimit(burst: 4, perMinute: 4)
        let a = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": redis.url]) { $0.clientLimit = small }
        let b = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": redis.url]) { $0.clientLimit = small }
        func send(_ relay: RelayFixture, _ token: Int, from source: String) async -> Int? {
            await RawHTTP.exchange(
                port: relay.server.port,
                RawHTTP.request("POST", "/v1/push", headers: ["Content-Type: application/json"], body: iosPush(token: iosToken(token)).canonicalString),
                source: source)?.status
        }
        #expect(await send(a, 1, from: "127.0.0.2") == 200)
        #expect(await send(b, 2, from: "127.0.0.2") == 200)
        #expect(await send(a, 3, from: "127.0.0.2") == 200)
        #expect(await send(b, 4, from: "127.0.0.2") == 200)
        #expect(await send(a, 5, from: "127.0.0.2") == 429)
        #expect(await send(b, 6, from: "127.0.0.2") == 429)
        // Another address has its own budget, on both.
        #expect(await send(b, 5, from: "127.0.0.3") == 200)
        #expect(await send(a, 6, from: "127.0.0.3") == 200)
        await a.stop()
        await b.stop()
        #expect((a.log.pushLines + b.log.pushLines).filter { $0.contains("limit=client") }.count == 2)
        // The refused pushes cost their tokens nothing: 5 and 6 were admitted from .3.
        #expect(a.apnsRequests.count + b.apnsRequests.count == 6)
    }

    @Test func redisKilledMidRunFailsOpenThenSharesAgainWhenBack() async throws {
        let redis = try RedisTestServer()
        let relay = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": redis.url]) {
            $0.redis?.maximumBackoff = .milliseconds(200)
        }
        // Connected first (slow under a sanitizer): the first pushes must be decided in Redis.
        let connected = await eventually { metric(relay.server.metricsText, "hapi_push_relay_redis_connected") == 1 }
        #expect(connected, "the limiter connected: \(relay.log.all.suffix(3))")
        for _ in 0..<5 { #expect(try await relay.push(iosPush()).status == 200) }
        #expect(try redis.cli("EXISTS", Self.deviceKey(mixedCaseToken)) == "1")

        redis.stop()
        // Pushes keep being answered, limited in this process with the same numbers.
        let token = iosToken(77)
        let clock = ContinuousClock()
        var slowest = Duration.zero
        let burstStart = clock.now
        for i in 0..<31 {
            let started = clock.now
            let status = try await relay.push(iosPush(token: token)).status
            slowest = max(slowest, clock.now - started)
            if i < 30 || clock.now - burstStart < Self.refillInterval {
                #expect(status == (i < 30 ? 200 : 429), "push \(i + 1) while Redis is down")
            }
        }
        // A refused connection is noticed at once; nothing here waits for a timeout.
        #expect(slowest < .seconds(2), "slowest push while Redis was down: \(slowest)")
        let down = relay.server.metricsText
        #expect(metric(down, "hapi_push_relay_rate_limiter_degraded") == 1)
        #expect(metric(down, "hapi_push_relay_redis_connected") == 0)
        #expect((metric(down, "hapi_push_relay_redis_errors_total") ?? 0) >= 1)
        #expect(metric(down, "hapi_push_relay_rate_limiter_local_decisions_total") == 31)
        #expect(relay.log.all.contains { $0.hasPrefix("rate limits: redis://127.0.0.1:\(redis.port)/0 unavailable (") && $0.hasSuffix("limiting in this process until it is back") })

        try redis.startAgain()
        let back = await eventually { metric(relay.server.metricsText, "hapi_push_relay_redis_connected") == 1 }
        #expect(back, "the limiter reconnected: \(relay.log.all.suffix(3))")
        #expect(relay.log.all.contains { $0.contains("back after") && $0.contains("shared again (31 pushes were limited in this process meanwhile)") })
        // Shared again: the push is decided in Redis (which restarted empty).
        let fresh = iosToken(78)
        #expect(try await relay.push(iosPush(token: fresh)).status == 200)
        #expect(try redis.cli("EXISTS", Self.deviceKey(fresh)) == "1")
        let up = relay.server.metricsText
        #expect(metric(up, "hapi_push_relay_rate_limiter_degraded") == 0)
        #expect(metric(up, "hapi_push_relay_rate_limiter_local_decisions_total") == 31)
        await relay.stop()
    }

    @Test func aSilentRedisCostsAPushAtMostAboutTheCommandTimeout() async throws {
        let redis = try RedisTestServer()
        let relay = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": redis.url]) {
            $0.redis?.maximumBackoff = .milliseconds(200)
        }
        #expect(try await relay.push(iosPush()).status == 200)
        let timeout = try #require(relay.server.configuration.redis?.commandTimeout)
        redis.pause()
        let clock = ContinuousClock()
        var latencies: [Duration] = []
        for i in 0..<10 {
            let started = clock.now
            #expect(try await relay.push(iosPush(token: iosToken(100 + i))).status == 200)
            latencies.append(clock.now - started)
        }
        // The first push waits for the command timeout once; the others are decided locally at
        // once while the limiter's thread retries. Bound: ten timeouts, far from a TCP timeout.
        #expect(latencies.allSatisfy { $0 < timeout * 10 }, "latencies: \(latencies)")
        #expect(latencies.dropFirst().allSatisfy { $0 < timeout * 5 }, "latencies: \(latencies)")
        #expect(metric(relay.server.metricsText, "hapi_push_relay_rate_limiter_degraded") == 1)
        #expect(relay.log.all.contains { $0.contains("unavailable (no answer within 100 ms)") })
        redis.resume()
        let back = await eventually { metric(relay.server.metricsText, "hapi_push_relay_rate_limiter_degraded") == 0 }
        #expect(back)
        let token = iosToken(200)
        #expect(try await relay.push(iosPush(token: token)).status == 200)
        #expect(try redis.cli("EXISTS", Self.deviceKey(token)) == "1")
        await relay.stop()
        print("redis paused: push latencies \(latencies.map { "\($0.wholeMilliseconds) ms" }.joined(separator: ", "))")
    }

    @Test func anUnreachableRedisAtStartIsNotAStartFailure() async throws {
        let port = try TestServerFiles.freePort()
        let relay = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": "redis://127.0.0.1:\(port)"]) {
            $0.redis?.maximumBackoff = .milliseconds(200)
        }
        #expect(relay.log.all.contains { $0.hasPrefix("rate limits: redis://127.0.0.1:\(port)/0 unavailable (") })
        #expect(try await relay.push(iosPush()).status == 200)
        #expect(metric(relay.server.metricsText, "hapi_push_relay_rate_limiter_degraded") == 1)
        let redis = try RedisTestServer(port: port)
        let back = await eventually { metric(relay.server.metricsText, "hapi_push_relay_redis_connected") == 1 }
        #expect(back)
        let token = iosToken(3)
        #expect(try await relay.push(iosPush(token: token)).status == 200)
        #expect(try redis.cli("EXISTS", Self.deviceKey(token)) == "1")
        #expect(metric(relay.server.metricsText, "hapi_push_relay_rate_limiter_degraded") == 0)
        await relay.stop()
    }

    @Test func theDocumentedACLIsEnough() async throws {
        let redis = try RedisTestServer()
        // docs/relay.md's ACL for a relay's own user, and nothing more.
        let rules = "~hapi-push-relay:* +evalsha +script|load +hset +hmget +pexpire +time +client|setname +select +auth"
        let arguments = ["ACL", "SETUSER", "relay", "on", ">acl-Pass-5"] + rules.split(separator: " ").map(String.init)
        #expect(try redis.cli(arguments) == "OK")
        let relay = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": "redis://relay:acl-Pass-5@127.0.0.1:\(redis.port)/3"])
        #expect(try await relay.push(iosPush()).status == 200)
        #expect(try redis.cli(["-n", "3", "EXISTS", Self.deviceKey(mixedCaseToken)]) == "1")
        #expect(metric(relay.server.metricsText, "hapi_push_relay_rate_limiter_local_decisions_total") == 0)
        #expect(relay.log.all.contains("rate limits: shared in redis://relay:***@127.0.0.1:\(redis.port)/3"))
        await relay.stop()
    }

    @Test func aRedisThatRefusesTheConfigurationStopsTheStart() async throws {
        let password = "right-Horse-battery-42"
        let redis = try RedisTestServer(password: password)
        let cases: [(url: String, mentions: String, secret: String?)] = [
            (redis.url(host: "127.0.0.1", password: "wrong-Staple-secret-7"), "the server refused the credentials: WRONGPASS", "wrong-Staple-secret-7"),
            ("redis://127.0.0.1:\(redis.port)", "the server requires a password", nil),
            (redis.url(host: "127.0.0.1", database: 99), "cannot select database 99", password),
        ]
        for entry in cases {
            do {
                let relay = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": entry.url])
                await relay.stop()
                Issue.record("started with \(entry.mentions)")
            } catch let error as PushRelayStartupError {
                #expect(error.message.hasPrefix("RELAY_REDIS_URL (redis://"), "\(error.message)")
                #expect(error.message.contains(entry.mentions), "\(error.message)")
                if let secret = entry.secret {
                    #expect(!error.message.contains(secret))
                    #expect(error.message.contains(":***@"))
                }
            }
        }
        // The right password: it starts, and the password is in nothing it says.
        let relay = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": redis.url])
        #expect(try await relay.push(iosPush()).status == 200)
        let health = try await relay.client.send(HTTPRequest(url: relay.url + "/health"))
        let metrics = relay.server.metricsText
        await relay.stop()
        for text in relay.log.all + [health.text, metrics, "\(relay.server.configuration.redis as Any)"] {
            #expect(!text.contains(password), "\(text)")
        }
        #expect(relay.log.all.contains("rate limits: shared in redis://:***@127.0.0.1:\(redis.port)/0"))
    }
}
