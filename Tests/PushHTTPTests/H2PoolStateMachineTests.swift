import Testing

@testable import PushHTTP

// The HTTP/2 pool's rules without a socket: every event is told to the value with its own
// instant, and what it answers is checked. The engine tests (HTTP2EngineTests) check the same
// rules end to end against a real server.
@Suite struct H2PoolStateMachineTests {
    static let start = ContinuousClock.now

    static func pool(connections: Int = 4, streams: Int = 1000) -> H2PoolStateMachine {
        H2PoolStateMachine(
            settings: .init(
                maximumConnections: connections, maximumStreamsPerConnection: streams, pingInterval: .seconds(60),
                pingTimeout: .seconds(5)))
    }

    /// A connection that opened and received the server's SETTINGS.
    static func ready(_ pool: inout H2PoolStateMachine, _ id: UInt64, streams announced: UInt32, at now: ContinuousClock.Instant = start) {
        pool.connectionStarted(id, now: now)
        pool.connectionOpened(id, now: now)
        pool.settingsReceived(id, maximumConcurrentStreams: announced)
    }

    // MARK: - Stream limits

    @Test func noStreamStartsBeforeTheServersSettingsAndNoSecondConnectionOpensMeanwhile() {
        var pool = Self.pool()
        #expect(pool.shouldOpenConnection(now: Self.start))
        pool.connectionStarted(1, now: Self.start)
        #expect(pool.connectionWithFreeStream == nil)
        #expect(!pool.shouldOpenConnection(now: Self.start), "one connection at a time while establishing")
        pool.connectionOpened(1, now: Self.start)
        #expect(pool.connectionWithFreeStream == nil, "open, but the server's limit is not known yet")
        #expect(pool.isEstablishing)
        #expect(!pool.shouldOpenConnection(now: Self.start))
        pool.settingsReceived(1, maximumConcurrentStreams: 2)
        #expect(pool.connectionWithFreeStream == 1)
        #expect(!pool.isEstablishing)
    }

    @Test func theServersLimitCapsStreamsAndAnotherConnectionOpensOnlyWhenAllAreFull() {
        var pool = Self.pool(connections: 2, streams: 1000)
        Self.ready(&pool, 1, streams: 2)
        pool.streamStarted(1)
        #expect(pool.connectionWithFreeStream == 1)
        #expect(!pool.shouldOpenConnection(now: Self.start), "one stream still free")
        pool.streamStarted(1)
        #expect(pool.connectionWithFreeStream == nil, "the server said 2")
        #expect(pool.shouldOpenConnection(now: Self.start))
        Self.ready(&pool, 2, streams: 2)
        pool.streamStarted(2)
        pool.streamStarted(2)
        #expect(pool.connectionWithFreeStream == nil)
        #expect(!pool.shouldOpenConnection(now: Self.start), "at the maximum of 2 connections")
        pool.streamEnded(1)
        #expect(pool.connectionWithFreeStream == 1, "a stream that ends frees its slot")
    }

    @Test func ourLimitCapsAGenerousServer() {
        var pool = Self.pool(connections: 1, streams: 3)
        Self.ready(&pool, 1, streams: UInt32.max)
        for _ in 0..<3 { pool.streamStarted(1) }
        #expect(pool.connectionWithFreeStream == nil)
        #expect(pool.connections.first?.streamLimit == 3)
    }

    // MARK: - GOAWAY

    @Test func aDrainingConnectionTakesNoStreamsLetsAReplacementOpenAndClosesWhenItsLastStreamEnds() {
        var pool = Self.pool(connections: 1)
        Self.ready(&pool, 1, streams: 100)
        pool.streamStarted(1)
        pool.streamStarted(1)
        #expect(!pool.shouldOpenConnection(now: Self.start))
        pool.stopNewStreams(1)
        #expect(pool.connectionWithFreeStream == nil)
        #expect(pool.shouldOpenConnection(now: Self.start), "a draining connection does not count against the maximum")
        #expect(!pool.isDrained(1))
        pool.streamEnded(1)
        #expect(!pool.isDrained(1))
        pool.streamEnded(1)
        #expect(pool.isDrained(1))
        pool.connectionClosed(1, now: Self.start)
        #expect(pool.connections.isEmpty)
    }

    @Test func anOpenConnectionWithStreamsLeftIsNeverDrained() {
        var pool = Self.pool()
        Self.ready(&pool, 1, streams: 100)
        #expect(!pool.isDrained(1))
        #expect(!pool.isDrained(99), "an unknown connection")
    }

    // MARK: - Idle PING

    @Test func anIdleConnectionIsPingedOnceAndDeclaredDeadWhenThePingGoesUnanswered() {
        var pool = Self.pool()
        Self.ready(&pool, 1, streams: 100)
        #expect(pool.tick(now: Self.start + .seconds(59)).isEmpty)
        #expect(pool.tick(now: Self.start + .seconds(60)) == [.sendPing(connection: 1)])
        #expect(pool.tick(now: Self.start + .seconds(61)).isEmpty, "one PING at a time")
        #expect(pool.tick(now: Self.start + .seconds(65)) == [.pingUnanswered(connection: 1)])
    }

    @Test func whatArrivesPutsThePingOffAndAnAnswerClearsIt() {
        var pool = Self.pool()
        Self.ready(&pool, 1, streams: 100)
        pool.heard(1, now: Self.start + .seconds(50))
        #expect(pool.tick(now: Self.start + .seconds(60)).isEmpty, "heard from 10 s ago")
        #expect(pool.tick(now: Self.start + .seconds(110)) == [.sendPing(connection: 1)])
        pool.pingAnswered(1)
        pool.heard(1, now: Self.start + .seconds(111))
        #expect(pool.tick(now: Self.start + .seconds(116)).isEmpty, "answered: not dead")
        #expect(pool.tick(now: Self.start + .seconds(171)) == [.sendPing(connection: 1)])
    }

    @Test func aConnectionStillConnectingIsNeverPinged() {
        var pool = Self.pool()
        pool.connectionStarted(1, now: Self.start)
        #expect(pool.tick(now: Self.start + .seconds(600)).isEmpty)
    }

    // MARK: - Connect backoff

    @Test func aFailedConnectFailsTheWaitingAndTheNextWaitsABackoffThatDoublesUpTo5s() {
        var pool = Self.pool()
        var now = Self.start
        let expected: [Duration] = [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600), .milliseconds(3200), .seconds(5), .seconds(5)]
        for (index, backoff) in expected.enumerated() {
            #expect(pool.shouldOpenConnection(now: now))
            let id = UInt64(index + 1)
            pool.connectionStarted(id, now: now)
            #expect(pool.connectFailed(id, .connectionRefused, now: now) == .failWaiting)
            #expect(pool.consecutiveConnectFailures == index + 1)
            #expect(!pool.shouldOpenConnection(now: now + backoff - .milliseconds(1)), "failure \(index + 1): not before \(backoff)")
            #expect(pool.shouldOpenConnection(now: now + backoff))
            now = now + backoff
        }
    }

    @Test func aConnectionThatOpensEndsTheBackoff() {
        var pool = Self.pool()
        pool.connectionStarted(1, now: Self.start)
        _ = pool.connectFailed(1, .connectionRefused, now: Self.start)
        pool.connectionStarted(2, now: Self.start + .milliseconds(100))
        _ = pool.connectFailed(2, .connectionRefused, now: Self.start + .milliseconds(100))
        let later = Self.start + .milliseconds(300)
        pool.connectionStarted(3, now: later)
        pool.connectionOpened(3, now: later)
        #expect(pool.consecutiveConnectFailures == 2, "TLS and ALPN are not enough: the server's SETTINGS end it")
        pool.settingsReceived(3, maximumConcurrentStreams: 100)
        #expect(pool.consecutiveConnectFailures == 0)
        #expect(pool.lastConnectError == nil)
        pool.connectionClosed(3, error: .connectionLost, now: later)
        #expect(pool.shouldOpenConnection(now: later), "a connection lost after it was usable starts no backoff")
        pool.connectionStarted(4, now: later)
        _ = pool.connectFailed(4, .connectionRefused, now: later)
        #expect(pool.shouldOpenConnection(now: later + .milliseconds(100)), "the count started again from one")
    }

    @Test func aConnectionClosedBeforeItsSettingsCountsAsAFailedConnectButFailsNobody() {
        var pool = Self.pool()
        pool.connectionStarted(1, now: Self.start)
        pool.connectionOpened(1, now: Self.start)
        pool.connectionClosed(1, error: .connectionLost, now: Self.start)
        #expect(pool.consecutiveConnectFailures == 1)
        #expect(!pool.shouldOpenConnection(now: Self.start + .milliseconds(99)), "backing off: no connect storm")
        #expect(pool.shouldOpenConnection(now: Self.start + .milliseconds(100)))
        // Closed by us (the origin has no h2): no failure.
        pool.connectionStarted(2, now: Self.start + .seconds(1))
        pool.connectionClosed(2, now: Self.start + .seconds(1))
        #expect(pool.consecutiveConnectFailures == 1)
    }

    @Test func aFailedConnectBesideOnlyADrainingConnectionFailsTheWaiting() {
        var pool = Self.pool(connections: 2)
        Self.ready(&pool, 1, streams: 10)
        pool.streamStarted(1)
        pool.stopNewStreams(1)
        pool.connectionStarted(2, now: Self.start)
        #expect(pool.connectFailed(2, .connectionRefused, now: Self.start) == .failWaiting, "a draining connection serves none of them")
    }

    @Test func aFailedConnectBesideAnOpenConnectionKeepsTheWaitingQueued() {
        var pool = Self.pool(connections: 2)
        Self.ready(&pool, 1, streams: 1)
        pool.streamStarted(1)
        pool.connectionStarted(2, now: Self.start)
        #expect(pool.connectFailed(2, .timeout, now: Self.start) == .keepWaiting)
        #expect(pool.waitingTimeoutError.code == .timeout, "they waited for a stream of the open one, not for a connect")
        pool.streamEnded(1)
        #expect(pool.connectionWithFreeStream == 1, "the open connection serves them")
    }

    @Test func aRequestWhoseDeadlinePassesDuringTheBackoffFailsWithTheConnectError() {
        var pool = Self.pool()
        #expect(pool.waitingTimeoutError.code == .timeout)
        pool.connectionStarted(1, now: Self.start)
        _ = pool.connectFailed(1, HTTPClientError(.connectionRefused, detail: "connect to 127.0.0.1:1 failed"), now: Self.start)
        let error = pool.waitingTimeoutError
        #expect(error.code == .connectionRefused)
        #expect(error.detail?.hasPrefix("connect to 127.0.0.1:1 failed; ") == true)
        #expect(error.detail?.contains("1 failed in a row") == true)
        pool.connectionStarted(2, now: Self.start + .seconds(1))
        pool.connectionOpened(2, now: Self.start + .seconds(1))
        pool.settingsReceived(2, maximumConcurrentStreams: 100)
        #expect(pool.waitingTimeoutError.code == .timeout, "connected since: a plain timeout")
    }
}
