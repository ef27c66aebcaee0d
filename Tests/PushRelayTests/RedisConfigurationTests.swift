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
import PushTestSupport
import Testing

@testable import PushRelay

/// `RELAY_REDIS_URL` and `RELAY_REDIS_CA_FILE`: what is accepted, what is refused at start-up
/// (naming the variable, never repeating the URL), and the password kept out of everything
/// printed; two `hapi-push-relay` processes sharing one Redis.
@Suite struct RedisConfigurationTests {
    @Test func urlsAreParsed() throws {
        let plain = try PushRelayRedisConfiguration(url: "redis://localhost")
        #expect(plain.host == "localhost" && plain.port == 6379 && plain.database == 0 && !plain.usesTLS)
        #expect(plain.username == nil && !plain.hasPassword)
        #expect(plain.redactedURL == "redis://localhost:6379/0")
        #expect(plain.commandTimeout == .milliseconds(100) && plain.connectTimeout == .milliseconds(200))
        #expect(plain.maximumBackoff == .seconds(5) && plain.keyPrefix == "hapi-push-relay:")

        let full = try PushRelayRedisConfiguration(url: "REDISS://relay:p%40ss:w0rd@[::1]:6380/3")
        #expect(full.usesTLS && full.host == "::1" && full.port == 6380 && full.database == 3)
        #expect(full.username == "relay" && full.password == "p@ss:w0rd")
        #expect(full.redactedURL == "rediss://relay:***@[::1]:6380/3")

        let defaultUser = try PushRelayRedisConfiguration(url: "redis://:secret@10.0.0.5:7000/")
        #expect(defaultUser.username == nil && defaultUser.password == "secret" && defaultUser.database == 0)
        #expect(defaultUser.redactedURL == "redis://:***@10.0.0.5:7000/0")
        // An unencoded "@" in a password: the user information ends at the last one.
        let at = try PushRelayRedisConfiguration(url: "redis://:a@b@cache.internal")
        #expect(at.password == "a@b" && at.host == "cache.internal")
        #expect(try PushRelayRedisConfiguration(url: "redis://:@h").hasPassword == false)
    }

    @Test func thePasswordIsInNothingPrinted() throws {
        let secret = "Sup3r-Secret-Value"
        let configuration = try PushRelayRedisConfiguration(url: "rediss://ops:\(secret)@redis.example.com:6380/1")
        var dumped = ""
        dump(configuration, to: &dumped)
        var parent = PushRelayConfiguration()
        parent.redis = configuration
        var dumpedParent = ""
        dump(parent, to: &dumpedParent)
        for text in [
            configuration.description, configuration.debugDescription, "\(configuration)", String(reflecting: configuration), dumped, dumpedParent,
        ] {
            #expect(!text.contains(secret), "\(text)")
        }
        #expect(configuration.description == "rediss://ops:***@redis.example.com:6380/1")
    }

    static let refused: [(url: String, mentions: String)] = [
        ("http://cache:6379", "neither redis:// nor rediss://"),
        ("redis://", "the host is missing"),
        ("redis://:Secret1@", "the host is missing"),
        ("redis://cache:Secret2", "the port is not a number"),
        ("redis://cache:0", "the port is not a number"),
        ("redis://cache:65536", "the port is not a number"),
        ("redis://Secret3@cache", "names a user but no password"),
        ("redis://user:@cache", "the password is empty"),
        ("redis://:Secret4%zz@cache", "broken percent escape"),
        ("redis://cache/Secret5", "the path must be a database number"),
        ("redis://cache/0?password=Secret6", "query parameters"),
        ("redis://[::1:6379", "closing bracket"),
        ("redis://[Secret7]:6379", "not an IPv6 address"),
        ("redis://ca che", "space, a control or a non-ASCII character"),
        ("redis://cache:6379/0#Secret8", "query parameters and fragments"),
        ("redis://cache!:6379", "the host must be a name or an address"),
    ]

    @Test func badURLsAreRefusedWithoutRepeatingThem() {
        for entry in Self.refused {
            do {
                _ = try PushRelayRedisConfiguration(url: entry.url)
                Issue.record("accepted \(entry.url)")
            } catch {
                #expect(error.message.hasPrefix("RELAY_REDIS_URL must be redis://[user:password@]host[:port][/db]"), "\(entry.url)")
                #expect(error.message.contains(entry.mentions), "\(entry.url): \(error.message)")
                for secret in (1...8).map({ "Secret\($0)" }) { #expect(!error.message.contains(secret), "\(entry.url)") }
            }
        }
    }

    @Test func theCAFileVariables() throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let base = relayEnvironment(providers)
        // rediss:// without its own CA trusts RELAY_CA_FILE's in addition to the system store.
        let fallback = try PushRelayConfiguration(environment: base.merging(["RELAY_REDIS_URL": "rediss://cache"]) { $1 })
        #expect(fallback.redis?.caFile == providers.caBundlePath && fallback.redis?.caFileVariable == "RELAY_CA_FILE")
        let redisCA = providers.directory + "/redis-ca.pem"
        try Data(String(contentsOfFile: providers.caBundlePath, encoding: .utf8).utf8).write(to: URL(fileURLWithPath: redisCA))
        let own = try PushRelayConfiguration(
            environment: base.merging(["RELAY_REDIS_URL": "rediss://cache", "RELAY_REDIS_CA_FILE": redisCA]) { $1 })
        #expect(own.redis?.caFile == redisCA && own.redis?.caFileVariable == "RELAY_REDIS_CA_FILE")
        // redis:// is plain TCP: no CA at all.
        #expect(try PushRelayConfiguration(environment: base.merging(["RELAY_REDIS_URL": "redis://cache"]) { $1 }).redis?.caFile == nil)
        #expect(try PushRelayConfiguration(environment: base).redis == nil)
        let refusals: [([String: String], String)] = [
            (["RELAY_REDIS_CA_FILE": providers.caBundlePath], "RELAY_REDIS_URL is not"),
            (["RELAY_REDIS_URL": "redis://cache", "RELAY_REDIS_CA_FILE": providers.caBundlePath], "only for rediss://"),
            (["RELAY_REDIS_URL": "rediss://cache", "RELAY_REDIS_CA_FILE": providers.directory + "/missing.pem"], "missing.pem cannot be read"),
            // A key is not a CA: refused here, not at the first connection.
            (["RELAY_REDIS_URL": "rediss://cache", "RELAY_REDIS_CA_FILE": providers.apnsKeyPath], "RELAY_REDIS_CA_FILE: \(providers.apnsKeyPath) holds a private key, not a certificate"),
            (["RELAY_REDIS_URL": "  "], "RELAY_REDIS_URL is set but only whitespace"),
        ]
        for (extra, mentions) in refusals {
            let error = #expect(throws: PushRelayStartupError.self) { try PushRelayConfiguration(environment: base.merging(extra) { $1 }) }
            #expect(error?.message.contains(mentions) == true, "\(extra): \(error?.message ?? "")")
        }
    }

    @Test func theBinaryRefusesBadRedisSettingsNamingTheVariable() async throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let base = relayEnvironment(providers)
        let cases: [[String: String]] =
            Self.refused.prefix(8).map { ["RELAY_REDIS_URL": $0.url] } + [
                ["RELAY_REDIS_CA_FILE": providers.caBundlePath],
                ["RELAY_REDIS_URL": "rediss://127.0.0.1:1", "RELAY_REDIS_CA_FILE": providers.apnsKeyPath],
            ]
        for extra in cases {
            let relay = try RelayProcess(environment: base.merging(extra) { $1 })
            let status = await relay.exitStatus()
            #expect(status == 1, "\(extra): \(relay.stdout)")
            #expect(relay.stderr.hasPrefix("hapi-push-relay: RELAY_REDIS_"), "\(extra): \(relay.stderr)")
            #expect(!relay.stdout.contains("listening on"))
            for secret in (1...8).map({ "Secret\($0)" }) { #expect(!relay.stderr.contains(secret)) }
        }
        let help = try RelayProcess(environment: [:], arguments: ["--help"])
        #expect(await help.exitStatus() == 0)
        #expect(help.stdout.contains("RELAY_REDIS_URL") && help.stdout.contains("RELAY_REDIS_CA_FILE"))
    }

    @Test func twoRelayProcessesShareOneRedisAndNeverPrintItsPassword() async throws {
        let password = "Pr0cess-Password-91"
        let redis = try RedisTestServer(password: password)
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let environment = relayEnvironment(providers).merging(["RELAY_REDIS_URL": redis.url, "RELAY_METRICS_PORT": "0"]) { $1 }
        let a = try RelayProcess(environment: environment)
        defer { a.terminate() }
        let b = try RelayProcess(environment: environment)
        defer { b.terminate() }
        let urlA = try #require(await a.listeningURL(), "\(a.stderr)")
        let urlB = try #require(await b.listeningURL(), "\(b.stderr)")
        let client = try HTTPClient()
        func push(_ url: String, _ token: String = mixedCaseToken) async throws -> Int {
            try await client.send(HTTPRequest(method: .post, url: url + "/v1/push", body: Array(iosPush(token: token).canonicalString.utf8))).status
        }
        for i in 0..<30 { #expect(try await push(i.isMultiple(of: 2) ? urlA : urlB) == 200, "push \(i + 1)") }
        #expect(try await push(urlA) == 429)
        #expect(try await push(urlB) == 429)
        var answers = [try await client.send(HTTPRequest(url: urlA + "/health")).text]
        for process in [a, b] {
            #expect(await process.waitFor("metrics on http://127.0.0.1:"))
            let line = process.stdout.split(separator: "\n").first { $0.hasPrefix("metrics on ") } ?? ""
            let metricsURL = String(line.dropFirst("metrics on ".count))
            answers.append(try await client.send(HTTPRequest(url: metricsURL)).text)
        }
        #expect(answers[1].contains("hapi_push_relay_rate_limiter_degraded 0"))
        // Redis gone: both keep answering, and say so.
        redis.stop()
        #expect(try await push(urlA, iosToken(5)) == 200)
        #expect(try await push(urlB, iosToken(6)) == 200)
        #expect(await a.waitFor("limiting in this process until it is back"))
        await client.shutdown()
        a.signal(SIGTERM)
        b.signal(SIGTERM)
        #expect(await a.exitStatus() == 0, "\(a.stderr)")
        #expect(await b.exitStatus() == 0, "\(b.stderr)")
        #expect(a.stdout.contains("rate limits: shared in redis://:***@127.0.0.1:\(redis.port)/0"))
        for text in [a.stdout, a.stderr, b.stdout, b.stderr] + answers {
            #expect(!text.contains(password), "\(text)")
        }
        #expect(providers.apns.requests.count == 32)
    }
}
