import Foundation
import PushEnvelope
import PushHTTP
import PushTestSupport
import Testing

@testable import PushRelay

/// `rediss://` against Debian's redis-server with TLS on (`--tls-port`, a throwaway CA): our
/// socket and OpenSSL session, hiredis's encoder and reply parser; verification always on (the
/// system store plus `RELAY_REDIS_CA_FILE` or `RELAY_CA_FILE`), the name or address checked.
@Suite struct RedisTLSTests {
    @Test func twoRelaysShareOneBudgetOverTLS() async throws {
        let password = "tls-Pass-Word-33"
        let redis = try RedisTestServer(password: password, transport: .tls(names: "DNS:localhost,IP:127.0.0.1"))
        let caFile = try #require(redis.caPath)
        let environment = ["RELAY_REDIS_URL": redis.url, "RELAY_REDIS_CA_FILE": caFile]
        let a = try await RelayFixture.start(environment: environment)
        let b = try await RelayFixture.start(environment: environment)
        let clock = ContinuousClock()
        let started = clock.now
        let first = try await RedisRelayTests.burst([a, b], count: 30)
        #expect(first == [Int](repeating: 200, count: 30), "\(first)")
        let last = [try await a.push(iosPush()).status, try await b.push(iosPush()).status]
        if clock.now - started < RedisRelayTests.refillInterval { #expect(last == [429, 429]) }
        #expect(try redis.cli("EXISTS", RedisRelayTests.deviceKey(mixedCaseToken)) == "1")
        await a.stop()
        await b.stop()
        #expect(a.log.all.contains("rate limits: shared in rediss://:***@127.0.0.1:\(redis.port)/0"))
        #expect(!(a.log.all + b.log.all).joined().contains(password))
    }

    @Test func aHostNameIsSentAsSNIAndCheckedWithTheCAFromRelayCAFile() async throws {
        let redis = try RedisTestServer(transport: .tls(names: "DNS:localhost"))
        let redisCA = try #require(redis.caPath)
        // One bundle for the relay's own stand-ins' CAs and Redis's: RELAY_CA_FILE serves both.
        let relay = try await RelayFixture.start(environment: { providers in
            let bundle = providers.directory + "/both.pem"
            let pem = try String(contentsOfFile: providers.caBundlePath, encoding: .utf8) + "\n" + String(contentsOfFile: redisCA, encoding: .utf8)
            try Data(pem.utf8).write(to: URL(fileURLWithPath: bundle))
            return ["RELAY_REDIS_URL": redis.url(host: "localhost"), "RELAY_CA_FILE": bundle]
        })
        #expect(relay.server.configuration.redis?.caFileVariable == "RELAY_CA_FILE")
        let answer = try await relay.push(iosPush())
        #expect(answer.status == 200, "\(answer.text) \(relay.log.all)")
        #expect(try redis.cli("EXISTS", RedisRelayTests.deviceKey(mixedCaseToken)) == "1")
        #expect(relay.log.all.contains("rate limits: shared in rediss://localhost:\(redis.port)/0"))
        await relay.stop()
    }

    @Test func anUntrustedOrMisnamedCertificateStopsTheStart() async throws {
        let redis = try RedisTestServer(transport: .tls(names: "DNS:localhost"))
        let caFile = try #require(redis.caPath)
        let cases: [(environment: [String: String], mentions: String)] = [
            // The system store alone does not know the test CA.
            (["RELAY_REDIS_URL": redis.url(host: "localhost")], "the server's certificate failed verification"),
            // Trusted, but the certificate is for localhost, not for 127.0.0.1.
            (["RELAY_REDIS_URL": redis.url, "RELAY_REDIS_CA_FILE": caFile], "the server's certificate failed verification"),
        ]
        for entry in cases {
            do {
                let relay = try await RelayFixture.start(environment: entry.environment)
                await relay.stop()
                Issue.record("started: \(entry.environment)")
            } catch let error as PushRelayStartupError {
                #expect(error.message.hasPrefix("RELAY_REDIS_URL (rediss://"), "\(error.message)")
                #expect(error.message.contains(entry.mentions), "\(error.message)")
            }
        }
    }

    @Test func aTLSRedisThatGoesSilentOrAwayFailsOpenAndComesBack() async throws {
        let redis = try RedisTestServer(transport: .tls(names: "IP:127.0.0.1"))
        let relay = try await RelayFixture.start(environment: ["RELAY_REDIS_URL": redis.url, "RELAY_REDIS_CA_FILE": try #require(redis.caPath)]) {
            $0.redis?.maximumBackoff = .milliseconds(200)
        }
        #expect(try await relay.push(iosPush()).status == 200)
        redis.pause()
        let clock = ContinuousClock()
        let started = clock.now
        #expect(try await relay.push(iosPush(token: iosToken(1))).status == 200)
        #expect(clock.now - started < .seconds(1))
        #expect(relay.log.all.contains { $0.contains("unavailable (no answer within 100 ms)") })
        redis.resume()
        #expect(await eventually { metric(relay.server.metricsText, "hapi_push_relay_rate_limiter_degraded") == 0 })
        redis.stop()
        #expect(try await relay.push(iosPush(token: iosToken(2))).status == 200)
        #expect(metric(relay.server.metricsText, "hapi_push_relay_rate_limiter_degraded") == 1)
        try redis.startAgain()
        #expect(await eventually { metric(relay.server.metricsText, "hapi_push_relay_redis_connected") == 1 })
        let token = iosToken(3)
        #expect(try await relay.push(iosPush(token: token)).status == 200)
        #expect(try redis.cli("EXISTS", RedisRelayTests.deviceKey(token)) == "1")
        await relay.stop()
    }

    @Test func rediss_toAPlainPortIsUnavailableNotAHang() async throws {
        let redis = try RedisTestServer()
        let limiter = RedisPushRelayRateLimiter(configuration: try redisConfiguration(redis, url: "rediss://127.0.0.1:\(redis.port)"))
        let problem = await limiter.firstConnection()
        #expect(problem?.kind == .unavailable)
        #expect(problem?.message.contains("TLS handshake") == true, "\(problem?.message ?? "")")
        #expect(await limiter.admit(client: "ip", device: deviceDigest(1)) == .admitted)
        #expect(limiter.status.isDegraded && limiter.status.localDecisions == 1)
        await limiter.shutdown()
    }
}
