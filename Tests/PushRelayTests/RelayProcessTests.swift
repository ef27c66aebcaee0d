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

/// The built `hapi-push-relay`, started as an operator starts it: port 0, the `listening on`
/// line, start-up failures naming the variable, and a graceful stop on SIGTERM and SIGINT.
@Suite struct RelayProcessTests {
    @Test func startsOnAFreePortAndAnswers() async throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let relay = try RelayProcess(environment: relayEnvironment(providers).merging(["RELAY_METRICS_PORT": "0"]) { $1 })
        defer { relay.terminate() }
        let url = try #require(await relay.listeningURL(), "no listening line: \(relay.stdout) \(relay.stderr)")
        #expect(url.hasPrefix("http://127.0.0.1:"))
        let port = try #require(RelayProcess.port(of: url))
        #expect(port > 0 && port != 8790)
        let client = try HTTPClient()
        let health = try await client.send(HTTPRequest(url: url + "/health"))
        #expect(health.status == 200)
        let push = try await client.send(
            HTTPRequest(method: .post, url: url + "/v1/push", body: Array(iosPush().canonicalString.utf8)))
        #expect(push.status == 200)
        #expect(await relay.waitFor("metrics on http://127.0.0.1:"))
        await client.shutdown()
        relay.signal(SIGTERM)
        #expect(await relay.exitStatus() == 0)
        #expect(relay.stdout.contains("push platform=ios token="))
        #expect(!relay.stdout.contains(mixedCaseToken.lowercased()))
        #expect(providers.apns.requests.count == 1)
    }

    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalLetsInFlightPushesFinishThenExitsZero(_ signal: Int32) async throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        providers.apns.respond { _ in .json("").delayed(milliseconds: 800) }
        let relay = try RelayProcess(environment: relayEnvironment(providers))
        defer { relay.terminate() }
        let url = try #require(await relay.listeningURL(), "no listening line: \(relay.stderr)")
        let client = try HTTPClient()
        async let slow = client.send(HTTPRequest(method: .post, url: url + "/v1/push", body: Array(iosPush().canonicalString.utf8)))
        // Wait until APNs has the push, then ask the relay to stop.
        for _ in 0..<200 where providers.apns.requests.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        let clock = ContinuousClock()
        let start = clock.now
        relay.signal(signal)
        let answer = try await slow
        #expect(answer.status == 200, "the push in flight was answered")
        let status = await relay.exitStatus()
        #expect(status == 0)
        #expect(clock.now - start < .seconds(10))
        #expect(relay.stdout.contains("stopping (\(signal == SIGINT ? "SIGINT" : "SIGTERM"))"))
        #expect(relay.stdout.contains("hapi-push-relay stopped"))
        // No new connection is accepted once stopping.
        let port = try #require(RelayProcess.port(of: url))
        #expect(await RawHTTP.exchange(port: port, RawHTTP.request("GET", "/health"), timeoutSeconds: 2) == nil)
        await client.shutdown()
    }

    /// The issue's attack at a smaller scale, against the built binary: 300 connections from one
    /// address, each with a partial request (`POST /v1/push`, `Host`, then a header byte now and
    /// then), while the relay has room for 256. `/health` and pushes from other connections are
    /// answered throughout; the attacker holds at most 64 connections, and each is closed when
    /// its request's 10 s run out.
    @Test func theSlowClientAttackLeavesHealthAnswered() async throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let relay = try RelayProcess(environment: relayEnvironment(providers).merging(["RELAY_MAX_CONNECTIONS": "256"]) { $1 })
        defer { relay.terminate() }
        let url = try #require(await relay.listeningURL(), "no listening line: \(relay.stdout) \(relay.stderr)")
        let port = try #require(RelayProcess.port(of: url))
        #expect(await relay.waitFor("connections: at most 256 (64 per address)"))
        let attack = Task {
            try await PushThread.run(name: "relay-test") { () -> (held: Int, heldAtEnd: Int) in
                let sockets = (0..<300).compactMap { _ in TestSocket.connect(port: port, source: "127.0.0.2") }
                for fd in sockets { TestSocket.send(fd, "POST /v1/push HTTP/1.1\r\nHost: relay.test\r\n") }
                var held = 0
                let start = RelayConnectionGuard.now()
                // One header byte per connection every second, for 13 s. Counted a second after
                // each drip: a connection still in the listen backlog is not held by the relay
                // (past the limit, each one accepted closes one of the attacker's older ones).
                while RelayConnectionGuard.now() - start < 13_000 {
                    for fd in sockets where !TestSocket.isClosed(fd) { TestSocket.send(fd, "X") }
                    usleep(1_000_000)
                    held = max(held, sockets.filter { !TestSocket.isClosed($0) }.count)
                }
                let heldAtEnd = sockets.filter { !TestSocket.isClosed($0) }.count
                sockets.forEach { close($0) }
                return (held, heldAtEnd)
            }
        }
        let client = try HTTPClient(configuration: .init(requestTimeout: .seconds(5)))
        var slowest = Duration.zero
        var answered = 0
        let clock = ContinuousClock()
        for round in 0..<12 {
            try await Task.sleep(for: .seconds(1))
            // A fresh connection each time (the client's pool would otherwise reuse one).
            let start = clock.now
            let health = await RawHTTP.exchange(port: port, RawHTTP.request("GET", "/health"), timeoutSeconds: 5)
            slowest = max(slowest, clock.now - start)
            if health?.status == 200 { answered += 1 }
            if round % 4 == 0 {
                let push = try await client.send(
                    HTTPRequest(method: .post, url: url + "/v1/push", body: Array(iosPush(token: iosToken(round)).canonicalString.utf8)))
                #expect(push.status == 200, "push during the attack, round \(round)")
            }
        }
        let (held, heldAtEnd) = try await attack.value
        await client.shutdown()
        relay.signal(SIGTERM)
        #expect(await relay.exitStatus() == 0)
        #expect(answered == 12, "/health answered \(answered) of 12 times during the attack")
        #expect(slowest < .seconds(2), "slowest /health: \(slowest)")
        #expect(held <= 64, "the attacker held \(held) connections")
        #expect(heldAtEnd == 0, "every trickling request was closed at its deadline")
    }

    static let failures: [(name: String, environment: [String: String], mentions: String)] = [
        ("nothing configured", ["RELAY_PORT": "0"], "RELAY_FCM_SERVICE_ACCOUNT_PATH"),
        ("partial APNs", ["RELAY_APNS_KEY_P8_PATH": "/tmp/x.p8", "RELAY_APNS_KEY_ID": "K", "RELAY_APNS_TEAM_ID": "T"], "RELAY_APNS_BUNDLE_ID"),
        ("unknown APNs environment", ["RELAY_APNS_ENV": "staging"], "RELAY_APNS_ENV"),
        ("whitespace-only variable", ["RELAY_APNS_KEY_ID": "   "], "RELAY_APNS_KEY_ID"),
        ("port not a number", ["RELAY_PORT": "eighty"], "RELAY_PORT"),
        ("port out of range", ["RELAY_PORT": "65536"], "RELAY_PORT"),
        ("negative port", ["RELAY_PORT": "-1"], "RELAY_PORT"),
        ("metrics port not a number", ["RELAY_METRICS_PORT": "x"], "RELAY_METRICS_PORT"),
        ("bad trust-proxy value", ["RELAY_TRUST_PROXY": "yes"], "RELAY_TRUST_PROXY"),
        ("bad host", ["RELAY_HOST": "relay.example.com"], "RELAY_HOST"),
        ("bad endpoint", ["RELAY_APNS_ENDPOINT": "ftp://apns"], "RELAY_APNS_ENDPOINT"),
        ("bad package name", ["RELAY_FCM_PACKAGE_NAME": "not a package"], "RELAY_FCM_PACKAGE_NAME"),
    ]

    @Test func startUpFailuresNameTheVariableAndExitOne() async throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let directory = providers.directory
        let notAKey = directory + "/not-a-key.p8"
        try Data("hello".utf8).write(to: URL(fileURLWithPath: notAKey))
        let rsaKey = directory + "/rsa.p8"
        try Data((TestKeys.rsa2048()?.privateKeyPEM ?? "").utf8).write(to: URL(fileURLWithPath: rsaKey))
        let badAccount = directory + "/account.json"
        try Data(#"{"project_id":"p"}"#.utf8).write(to: URL(fileURLWithPath: badAccount))
        let base = relayEnvironment(providers)
        var cases = Self.failures
        cases += [
            ("unreadable key", base.merging(["RELAY_APNS_KEY_P8_PATH": directory + "/missing.p8"]) { $1 }, "RELAY_APNS_KEY_P8_PATH"),
            ("malformed key", base.merging(["RELAY_APNS_KEY_P8_PATH": notAKey]) { $1 }, "RELAY_APNS_KEY_P8_PATH"),
            ("key of the wrong type", base.merging(["RELAY_APNS_KEY_P8_PATH": rsaKey]) { $1 }, "RELAY_APNS_KEY_P8_PATH"),
            ("unreadable service account", base.merging(["RELAY_FCM_SERVICE_ACCOUNT_PATH": directory + "/missing.json"]) { $1 }, "RELAY_FCM_SERVICE_ACCOUNT_PATH"),
            ("incomplete service account", base.merging(["RELAY_FCM_SERVICE_ACCOUNT_PATH": badAccount]) { $1 }, "RELAY_FCM_SERVICE_ACCOUNT_PATH"),
            ("unreadable CA file", base.merging(["RELAY_CA_FILE": directory + "/missing.pem"]) { $1 }, "RELAY_CA_FILE"),
            ("CA file that is not PEM", base.merging(["RELAY_CA_FILE": notAKey]) { $1 }, "RELAY_CA_FILE"),
        ]
        for entry in cases {
            let relay = try RelayProcess(environment: entry.environment)
            let status = await relay.exitStatus()
            #expect(status == 1, "\(entry.name): \(relay.stdout)")
            #expect(relay.stderr.hasPrefix("hapi-push-relay: "), "\(entry.name)")
            #expect(relay.stderr.contains(entry.mentions), "\(entry.name): \(relay.stderr)")
            #expect(!relay.stdout.contains("listening on"), "\(entry.name)")
            #expect(!relay.stderr.contains("PRIVATE KEY"), "\(entry.name)")
        }
    }

    @Test func aPortInUseIsAStartUpFailure() async throws {
        let providers = try LoopbackProviders()
        defer { providers.stop() }
        let first = try RelayProcess(environment: relayEnvironment(providers))
        defer { first.terminate() }
        let url = try #require(await first.listeningURL())
        let port = try #require(RelayProcess.port(of: url))
        let second = try RelayProcess(environment: relayEnvironment(providers).merging(["RELAY_PORT": "\(port)"]) { $1 })
        #expect(await second.exitStatus() == 1)
        #expect(second.stderr.contains("RELAY_PORT"))
        #expect(second.stderr.contains("127.0.0.1:\(port)"))
        first.signal(SIGTERM)
        #expect(await first.exitStatus() == 0)
    }

    @Test func versionAndUsage() async throws {
        let version = try RelayProcess(environment: [:], arguments: ["--version"])
        #expect(await version.exitStatus() == 0)
        #expect(version.stdout == "hapi-push-relay \(PushRelayServer.version)\n")
        let help = try RelayProcess(environment: [:], arguments: ["--help"])
        #expect(await help.exitStatus() == 0)
        #expect(help.stdout.contains("RELAY_TRUST_PROXY"))
        let bad = try RelayProcess(environment: [:], arguments: ["--port", "1"])
        #expect(await bad.exitStatus() == 2)
    }
}
