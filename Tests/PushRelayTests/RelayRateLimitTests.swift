import PushEnvelope
import PushHTTP
import PushLoopbackServer
import PushSync
import PushTestSupport
import PushTransports
import Testing

@testable import PushRelay

/// The abuse limits: per device token (30 a minute, burst 30), per client IP (300 a minute,
/// burst 300, checked first), bounded memory, and `X-Forwarded-For` only when trusted.
@Suite struct RelayRateLimitTests {
    @Test func the31stPushPerTokenWithinAMinuteIsRefused() async throws {
        let clock = ManualClock()
        let relay = try RelayFixture(limiter: InMemoryPushRelayRateLimiter(now: clock.now))
        for i in 0..<30 {
            let response = try await relay.push(iosPush())
            #expect(response.status == 200, "push \(i + 1)")
        }
        let limited = try await relay.push(iosPush())
        #expect(limited.status == 429)
        #expect(limited.text == #"{"ok":false,"code":"rate_limited"}"#)
        // The same device in another case is the same device.
        let upper = try await relay.push(iosPush(token: mixedCaseToken.uppercased()))
        #expect(upper.status == 429)
        // The limited pushes never reached APNs; other tokens are unaffected.
        #expect(relay.apnsRequests.count == 30)
        let other = try await relay.push(iosPush(token: String(repeating: "f", count: 64)))
        #expect(other.status == 200)
        // 30 a minute: one more every two seconds.
        clock.advance(1.9)
        #expect(try await relay.push(iosPush()).status == 429)
        clock.advance(0.2)
        #expect(try await relay.push(iosPush()).status == 200)
        #expect(try await relay.push(iosPush()).status == 429)
        clock.advance(60)
        for _ in 0..<30 { #expect(try await relay.push(iosPush()).status == 200) }
        #expect(try await relay.push(iosPush()).status == 429)
        await relay.stop()
        let lines = relay.log.pushLines.filter { $0.contains("outcome=rate_limited") }
        #expect(lines.count == 5)
        #expect(lines.allSatisfy { $0.contains("limit=device") })
    }

    @Test func androidTokensAreCaseSensitiveAndSeparateFromIOS() async throws {
        let clock = ManualClock()
        let limiter = InMemoryPushRelayRateLimiter(deviceLimit: PushRelayRateLimit(burst: 1, perMinute: 1), now: clock.now)
        let relay = try RelayFixture(limiter: limiter)
        let token = String(repeating: "AB", count: 32)
        #expect(try await relay.push(androidPush(token: token)).status == 200)
        #expect(try await relay.push(androidPush(token: token)).status == 429)
        #expect(try await relay.push(androidPush(token: token.lowercased())).status == 200)
        #expect(try await relay.push(iosPush(token: token)).status == 200)
        clock.advance(60)
        #expect(try await relay.push(androidPush(token: token)).status == 200)
        await relay.stop()
        #expect(relay.fcmSends.count == 3)
    }

    @Test func theClientBudgetIsSharedAcrossTokensAndIsolatedBetweenIPs() async throws {
        let clock = ManualClock()
        let limiter = InMemoryPushRelayRateLimiter(clientLimit: PushRelayRateLimit(burst: 2, perMinute: 60), now: clock.now)
        let relay = try RelayFixture(limiter: limiter)
        func send(_ token: String, from source: String) async -> RawHTTP.Answer? {
            await RawHTTP.exchange(
                port: relay.server.port,
                RawHTTP.request("POST", "/v1/push", headers: ["Content-Type: application/json"], body: iosPush(token: token).canonicalString),
                source: source)
        }
        let a = String(repeating: "a", count: 64)
        let b = String(repeating: "b", count: 64)
        let c = String(repeating: "c", count: 64)
        #expect(await send(a, from: "127.0.0.2")?.status == 200)
        #expect(await send(b, from: "127.0.0.2")?.status == 200)
        let limited = await send(c, from: "127.0.0.2")
        #expect(limited?.status == 429)
        #expect(limited?.body == #"{"ok":false,"code":"rate_limited"}"#)
        #expect(relay.apnsRequests.count == 2)
        // Another IP has its own budget.
        #expect(await send(c, from: "127.0.0.3")?.status == 200)
        // 60 a minute: one back each second.
        clock.advance(1)
        #expect(await send(c, from: "127.0.0.2")?.status == 200)
        #expect(await send(c, from: "127.0.0.2")?.status == 429)
        await relay.stop()
        #expect(relay.log.pushLines.filter { $0.contains("limit=client") }.count == 2)
        // The IP refused the push first: token c's budget paid only for what was sent.
        #expect(relay.apnsRequests.count == 4)
    }

    @Test func xForwardedForIsIgnoredUnlessTheProxyIsTrusted() async throws {
        let small = PushRelayRateLimit(burst: 1, perMinute: 1)
        for trusted in [false, true] {
            let relay = try RelayFixture(limiter: InMemoryPushRelayRateLimiter(clientLimit: small)) { $0.trustProxy = trusted }
            func send(_ token: String, forwardedFor: String?) async throws -> Int {
                var headers: HTTPHeaders = ["content-type": "application/json"]
                if let forwardedFor { headers.add(name: "x-forwarded-for", value: forwardedFor) }
                return try await relay.push(iosPush(token: token).canonicalString, headers: headers).status
            }
            let first = try await send(iosToken(1), forwardedFor: "203.0.113.7, 10.0.0.1")
            // Same first hop, different later hops: the same client.
            let sameClient = try await send(iosToken(2), forwardedFor: " 203.0.113.7 ,10.9.9.9")
            // Another first hop: another client, only if trusted.
            let otherClient = try await send(iosToken(3), forwardedFor: "198.51.100.1")
            await relay.stop()
            #expect(first == 200)
            #expect(sameClient == 429)
            #expect(otherClient == (trusted ? 200 : 429), "trusted: \(trusted)")
        }
    }

    @Test func withoutAForwardedHeaderATrustedProxyFallsBackToTheSocket() {
        let service = RelayService(
            apns: nil, fcm: nil, limiter: InMemoryPushRelayRateLimiter(), trustProxy: true, providerTimeout: .seconds(1), version: "t",
            metrics: RelayMetrics(), log: { _ in })
        let head = MicroHTTPDaemon.Head(method: "POST", path: "/v1/push", contentLength: 0)
        #expect(service.clientKey(.init(head: head, body: [], clientAddress: "9.9.9.9", forwardedFor: nil)) == "9.9.9.9")
        #expect(service.clientKey(.init(head: head, body: [], clientAddress: "9.9.9.9", forwardedFor: " , 1.2.3.4")) == "9.9.9.9")
        #expect(service.clientKey(.init(head: head, body: [], clientAddress: "9.9.9.9", forwardedFor: "6.6.6.6, 7.7.7.7")) == "6.6.6.6")
        #expect(service.clientKey(.init(head: head, body: [], clientAddress: "", forwardedFor: nil)) == "unknown")
        let untrusted = RelayService(
            apns: nil, fcm: nil, limiter: InMemoryPushRelayRateLimiter(), trustProxy: false, providerTimeout: .seconds(1), version: "t",
            metrics: RelayMetrics(), log: { _ in })
        #expect(untrusted.clientKey(.init(head: head, body: [], clientAddress: "9.9.9.9", forwardedFor: "6.6.6.6")) == "9.9.9.9")
    }

    @Test func theClientIsCheckedFirstAndARefusalCostsTheDeviceNothing() {
        let clock = ManualClock()
        let limiter = InMemoryPushRelayRateLimiter(
            clientLimit: PushRelayRateLimit(burst: 1, perMinute: 1), deviceLimit: PushRelayRateLimit(burst: 1, perMinute: 1), now: clock.now)
        #expect(limiter.admitNow(client: "a", device: "d1") == .admitted)
        #expect(limiter.admitNow(client: "a", device: "d2") == .clientLimited)
        // a's refusal did not touch d2's budget: another client may still reach it, once.
        #expect(limiter.admitNow(client: "b", device: "d2") == .admitted)
        #expect(limiter.admitNow(client: "c", device: "d2") == .deviceLimited)
        // A client's admission is spent even when the device then refuses (the IP is checked first).
        #expect(limiter.admitNow(client: "c", device: "d3") == .clientLimited)
    }

    @Test func tablesStayBoundedEvictingIdleKeysFirstThenTheLeastRecentlyUsed() {
        var table = TokenBucketTable(limit: PushRelayRateLimit(burst: 2, perMinute: 60), capacity: 32)
        var now = 0.0
        // 32 keys, each drained to zero tokens (not idle).
        for i in 0..<32 {
            let first = table.take("busy-\(i)", now: now)
            let second = table.take("busy-\(i)", now: now)
            #expect(first && second)
        }
        #expect(table.count == 32)
        // A new key at capacity: nothing is idle, so the least recently used go (a sixteenth).
        let newZero = table.take("new-0", now: now)
        #expect(newZero)
        #expect(table.count == 31)
        #expect(!table.contains("busy-0") && !table.contains("busy-1"))
        #expect(table.contains("busy-2") && table.contains("busy-31") && table.contains("new-0"))
        // Keep busy-2 busy and make the rest idle (2 s refills 2 tokens at 60 a minute).
        now += 1
        _ = table.take("busy-2", now: now)
        now += 1.5
        _ = table.take("busy-2", now: now)
        for i in 1..<32 - 30 { _ = table.take("fill-\(i)", now: now) }
        #expect(table.count == 32)
        // Full again: every idle key goes before any busy one.
        let newOne = table.take("new-1", now: now)
        #expect(newOne)
        #expect(table.contains("busy-2"))
        #expect(table.contains("new-1"))
        #expect(!table.contains("busy-31"))
        #expect(table.count < 32)
        // Bounded however many keys arrive.
        for i in 0..<10_000 { _ = table.take("flood-\(i)", now: now) }
        #expect(table.count <= 32)
    }

    @Test func theDefaultLimiterIsTheSpecs() {
        let limiter = InMemoryPushRelayRateLimiter()
        #expect(limiter.clientLimit == PushRelayRateLimit(burst: 300, perMinute: 300))
        #expect(limiter.deviceLimit == PushRelayRateLimit(burst: 30, perMinute: 30))
        #expect(limiter.maximumKeys == 50_000)
        for i in 0..<300 { #expect(limiter.admitNow(client: "ip", device: "d\(i)") == .admitted) }
        #expect(limiter.admitNow(client: "ip", device: "d-last") == .clientLimited)
    }
}

