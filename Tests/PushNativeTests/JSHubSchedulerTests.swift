import PushSync
import Testing

import PushTransports
import DeviceRegistry
import PushEnvelope
@testable import PushNative

/// A clock that moves only when told to: sleepers whose deadline is reached wake on `advance`.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextId = 0
        var sleepers: [Int: Sleeper] = [:]
        var cancelled: Set<Int> = []
    }

    private let state = Locked(State())

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state -> Int in
            state.nextId += 1
            return state.nextId
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resume: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let sleeper = state.sleepers.removeValue(forKey: id) else {
                    state.cancelled.insert(id)  // not registered yet: the body sees it
                    return nil
                }
                return sleeper
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline is reached.
    func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return Array(due.values)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}

/// The hub around a scheduler: its sessions, and what was delivered.
final class SchedulerHarness: Sendable {
    let clock = ManualClock()
    private let sessions = Locked<[String: PushSession]>([:])
    private let delivered = Locked<[PushNotificationPayload]>([])
    let messages: [JSONValue]
    let scheduler: PushNotificationScheduler<ManualClock>

    init(debounce: Duration = .milliseconds(500), cooldown: Duration = .seconds(5), messages: [JSONValue] = []) {
        self.messages = messages
        let sessions = self.sessions
        let delivered = self.delivered
        scheduler = PushNotificationScheduler(
            clock: clock, permissionDebounce: debounce, readyCooldown: cooldown, session: { id in sessions.withLock { $0[id] } },
            recentMessages: { _ in messages }, deliver: { payload in delivered.withLock { $0.append(payload) } })
    }

    var sent: [PushNotificationPayload] { delivered.withLock { $0 } }

    /// Stores the session with these requests (nil: `requests` null) and tells the scheduler.
    func update(_ requests: JSONValue?, active: Bool = true) async {
        var session = HubFixture.session(requests: requests ?? .null)
        session.active = active
        sessions.withLock { $0[session.id] = session }
        await scheduler.sessionUpdated(session)
    }

    func advance(by duration: Duration) async {
        clock.advance(by: duration)
        await scheduler.settle()
    }

    func ready() async {
        await scheduler.messageReceived(sessionId: HubFixture.id, content: ["type": "event", "data": ["type": "ready"]])
    }
}

@Suite struct JSHubSchedulerTests {
    static let bash: JSONValue = ["tool": "Bash", "arguments": ["command": "ls"]]

    @Test("§4.2 trailing debounce: one push with the first pending request") func trailingDebounce() async {
        let hub = SchedulerHarness(debounce: .milliseconds(100))
        await hub.update(["req1": Self.bash])
        await hub.advance(by: .milliseconds(60))
        await hub.update(["req1": Self.bash, "req2": Self.bash])  // a new id restarts the timer
        await hub.advance(by: .milliseconds(99))
        #expect(hub.sent.isEmpty)  // 159 ms: not yet
        await hub.advance(by: .milliseconds(1))  // 160 ms
        #expect(hub.sent.map(\.requestId) == ["req1"])
        #expect(hub.sent.first?.type == .permissionRequest)
        #expect(hub.sent.first?.body == "Claude Bash: ls\nSession: hapi\nCommand: ls")
    }

    @Test("§4.2 updates without new ids neither restart nor cancel the timer") func noNewIds() async {
        let hub = SchedulerHarness(debounce: .milliseconds(100))
        await hub.update(["req1": Self.bash])
        await hub.advance(by: .milliseconds(60))
        await hub.update(["req1": Self.bash])
        await hub.advance(by: .milliseconds(40))
        #expect(hub.sent.count == 1)
    }

    @Test("§4.2 answered before the timer fires: nothing is sent (deliberate)") func answeredInTime() async {
        // JavaScript sends a spurious "Permission Request" without a requestId here.
        let hub = SchedulerHarness(debounce: .milliseconds(100))
        await hub.update(["req3": Self.bash])
        await hub.update([:])
        await hub.advance(by: .milliseconds(100))
        #expect(hub.sent.isEmpty)
        // req3 reappearing after {} is new again.
        await hub.update(["req3": Self.bash])
        await hub.advance(by: .milliseconds(100))
        #expect(hub.sent.map(\.requestId) == ["req3"])
        // requests null keeps the known set: req3 again is not new.
        await hub.update(nil)
        await hub.update(["req3": Self.bash])
        await hub.advance(by: .milliseconds(100))
        #expect(hub.sent.count == 1)
    }

    @Test("§4.2 going inactive within the window cancels; reactivation counts the ids as new") func inactiveCancels() async {
        let hub = SchedulerHarness(debounce: .milliseconds(100))
        await hub.update(["req9": Self.bash])
        await hub.update(["req9": Self.bash], active: false)
        #expect(await !hub.scheduler.hasTimer(HubFixture.id))
        await hub.advance(by: .milliseconds(200))
        #expect(hub.sent.isEmpty)
        await hub.update(["req9": Self.bash])
        await hub.advance(by: .milliseconds(100))
        #expect(hub.sent.map(\.requestId) == ["req9"])
    }

    @Test("§4.2 the session is read when the timer fires") func readAtFireTime() async {
        let hub = SchedulerHarness(debounce: .milliseconds(500))
        await hub.update(["b": Self.bash])
        // Later ids restart the timer; the push is about the first request pending at fire time.
        await hub.update(["b": Self.bash, "a": ["tool": "Read", "arguments": ["file_path": "/x"]], "7": Self.bash])
        await hub.advance(by: .milliseconds(500))
        #expect(hub.sent.map(\.requestId) == ["7"])  // index keys first (R1.4)
    }

    @Test("§4.2 a removed session fires nothing") func removed() async {
        let hub = SchedulerHarness()
        await hub.update(["r": Self.bash])
        await hub.scheduler.sessionRemoved(id: HubFixture.id)
        await hub.advance(by: .seconds(1))
        #expect(hub.sent.isEmpty)
    }

    @Test("§1.6 a question fires as an input-request") func question() async {
        let hub = SchedulerHarness()
        await hub.update(["q": ["tool": "AskUserQuestion", "arguments": ["questions": [["question": "Which?"]]]]])
        await hub.advance(by: .milliseconds(500))
        #expect(hub.sent.map(\.type) == [.inputRequest])
    }

    @Test("§4.3 ready cooldown") func readyCooldown() async {
        let hub = SchedulerHarness(cooldown: .milliseconds(300), messages: [HubFixture.agent("Done.")])
        await hub.update(nil)
        await hub.ready()
        await hub.advance(by: .milliseconds(100))
        await hub.ready()  // t+100: dropped
        await hub.advance(by: .milliseconds(250))
        await hub.ready()  // t+350: sent
        #expect(hub.sent.count == 2)
        #expect(hub.sent.first?.body == "Done.")
        // Exactly the cooldown later is allowed.
        await hub.advance(by: .milliseconds(300))
        await hub.ready()
        #expect(hub.sent.count == 3)
        // Inactive then active again: the next ready goes out at once.
        await hub.update(nil, active: false)
        await hub.update(nil)
        await hub.ready()
        #expect(hub.sent.count == 4)
    }

    @Test("§4.3 inactive or unknown sessions get no ready") func readyNeedsActiveSession() async {
        let hub = SchedulerHarness()
        await hub.ready()  // unknown session
        await hub.update(nil, active: false)
        await hub.ready()
        #expect(hub.sent.isEmpty)
    }

    @Test("§4.1 task notifications go out at once, every time") func tasks() async {
        let hub = SchedulerHarness()
        await hub.update(nil)
        let content = JSHubTaskTests.system("Tests passed", "completed")
        await hub.scheduler.messageReceived(sessionId: HubFixture.id, content: content)
        await hub.scheduler.messageReceived(sessionId: HubFixture.id, content: content)
        #expect(hub.sent.map(\.title) == ["Task completed", "Task completed"])
        await hub.scheduler.messageReceived(sessionId: HubFixture.id, content: ["type": "output", "data": ["type": "text"]])
        #expect(hub.sent.count == 2)
        await hub.update(nil, active: false)
        await hub.scheduler.messageReceived(sessionId: HubFixture.id, content: content)
        #expect(hub.sent.count == 2)
    }
}
