import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushSync
import Testing

/// Tokens whose thread-specific value glibc destroyed. glibc runs those destructors after a
/// thread's start routine has returned and before `pthread_join` returns, so a token found
/// here right after a join proves the thread was really joined, not just told to stop.
private let destroyed = Locked<Set<Int>>([])

private let exitKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { value in
        guard let value else { return }
        destroyed.withLock { _ = $0.insert(Int(bitPattern: value)) }
    }
    return key
}()

/// Marks the calling thread with `token`, seen in `destroyed` once the thread has ended.
private func markThisThread(_ token: Int) {
    pthread_setspecific(exitKey, UnsafeRawPointer(bitPattern: token))
}

private func thisThreadName() -> String {
    Platform.thisThreadName()
}

private struct Unavailable: Error {}

@Suite struct PushThreadTests {
    @Test func namesTheThreadAndGivesItTheStackAskedFor() throws {
        let seen = Locked<[(name: String, stack: Int)]>([])
        let small = try PushThread.start(name: "hapi-test-named", stackSize: 1 << 20) {
            seen.withLock { $0.append((thisThreadName(), Platform.thisThreadStackSize())) }
        }
        small.join()
        // The kernel keeps 15 bytes of a name; a longer one is cut, never refused.
        let standard = try PushThread.start(name: "hapi-a-very-long-thread-name") {
            seen.withLock { $0.append((thisThreadName(), Platform.thisThreadStackSize())) }
        }
        standard.join()
        let both = seen.withLock { $0 }
        try #require(both.count == 2)
        #expect(both[0].name == "hapi-test-named")
        #expect(both[1].name == "hapi-a-very-lon")
        // glibc may round a stack up to whole pages and add its guard page, never more.
        #expect((1 << 20...(1 << 20) + 65536).contains(both[0].stack), "stack of \(both[0].stack) bytes")
        let standardSize = PushThread.standardStackSize
        #expect((standardSize...standardSize + 65536).contains(both[1].stack), "stack of \(both[1].stack) bytes")
    }

    @Test func joinReturnsOnlyOnceTheThreadHasEnded() throws {
        let token = 0x5a_0001
        let thread = try PushThread.start(name: "hapi-test-join") {
            markThisThread(token)
            usleep(200_000)  // still running when join is called
        }
        #expect(!destroyed.withLock { $0.contains(token) })
        thread.join()
        #expect(thread.hasEnded)
        #expect(destroyed.withLock { $0.contains(token) }, "join returned before the thread had ended")
        thread.join()  // idempotent: returns at once
    }

    @Test func joinedSuspendsUntilTheThreadHasEndedAndJoinsIt() async throws {
        let token = 0x5a_0002
        let thread = try PushThread.start(name: "hapi-test-joined") {
            markThisThread(token)
            usleep(200_000)
        }
        await thread.joined()
        #expect(destroyed.withLock { $0.contains(token) }, "joined() returned before the thread had ended")
        await thread.joined()
        thread.join()
    }

    @Test func manyWaitersAllReturnAfterOneJoin() async throws {
        let token = 0x5a_0003
        let thread = try PushThread.start(name: "hapi-test-waiters") {
            markThisThread(token)
            usleep(100_000)
        }
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    await thread.joined()
                    return destroyed.withLock { $0.contains(token) }
                }
            }
            for await ended in group { #expect(ended) }
        }
    }

    @Test func aThreadThatCannotStartIsAnErrorAndItsBodyNeverRuns() async throws {
        let ran = Locked(false)
        // More stack than the address space holds: the system refuses the thread.
        let absurd = 1 << 50
        do {
            _ = try PushThread.start(name: "hapi-test-absurd", stackSize: absurd) { ran.withLock { $0 = true } }
            Issue.record("a thread with a \(absurd)-byte stack started")
        } catch {
            #expect(error.call == "pthread_create")
            #expect(error.code == EAGAIN)
            #expect(error.description == "cannot start thread hapi-test-absurd (pthread_create: EAGAIN, no thread or stack memory left)")
        }
        // A stack smaller than the system's minimum is refused before any thread is tried.
        do {
            _ = try PushThread.start(name: "hapi-test-tiny", stackSize: 1) { ran.withLock { $0 = true } }
            Issue.record("a thread with a 1-byte stack started")
        } catch {
            #expect(error.call == "pthread_attr_setstacksize")
            #expect(error.code == EINVAL)
        }
        // `run` throws too, and never runs the body on the calling thread instead.
        do {
            _ = try await PushThread.run(name: "hapi-test-absurd", stackSize: absurd) { ran.withLock { $0 = true } }
            Issue.record("run with a \(absurd)-byte stack ran")
        } catch {
            #expect(error.code == EAGAIN)
        }
        usleep(50_000)
        #expect(!ran.withLock { $0 }, "a body ran although its thread could not start")
    }

    @Test func runReturnsWhatTheBodyReturnedOnItsOwnThreadJoined() async throws {
        let token = 0x5a_0004
        let name = try await PushThread.run(name: "hapi-test-run") { () -> String in
            markThisThread(token)
            return thisThreadName()
        }
        #expect(name == "hapi-test-run")
        #expect(destroyed.withLock { $0.contains(token) }, "run returned before its thread had ended")
    }

    @Test func releasingAnUnjoinedHandleLetsTheThreadEndOnItsOwn() throws {
        let token = 0x5a_0005
        let release = WaitableLocked(false)
        do {
            _ = try PushThread.start(name: "hapi-test-detach") {
                release.wait(until: { $0 }, then: { _ in })
                markThisThread(token)
            }
        }
        // The handle is gone (detached); the thread still runs its body to the end.
        release.withLock { $0 = true }
        release.broadcast()
        let deadline = ContinuousClock.now + .seconds(10)
        while !destroyed.withLock({ $0.contains(token) }), ContinuousClock.now < deadline { usleep(1000) }
        #expect(destroyed.withLock { $0.contains(token) })
    }

    @Test func blockingWorkersShutdownJoinsEveryWorker() async throws {
        let workers = BlockingWorkers<Int>(name: "hapi-test-w", count: 2) { 7 }
        let token = 0x5a_0006
        let resource = try await workers.run(unavailable: Unavailable()) { (resource: inout Int) throws(Unavailable) -> Int in
            markThisThread(token)
            return resource
        }
        #expect(resource == 7)
        await workers.shutdown()
        #expect(destroyed.withLock { $0.contains(token) }, "shutdown returned before the worker had ended")
        await #expect(throws: Unavailable.self) {
            try await workers.run(unavailable: Unavailable()) { (_: inout Int) throws(Unavailable) -> Int in 0 }
        }
    }

    @Test func runOnceRunsOnAThreadOfItsOwn() async throws {
        let token = 0x5a_0007
        let name = try await BlockingWorkers<Void>.runOnce(name: "hapi-test-once", unavailable: Unavailable()) {
            () throws(Unavailable) -> String in
            markThisThread(token)
            return thisThreadName()
        }
        #expect(name == "hapi-test-once")
        #expect(destroyed.withLock { $0.contains(token) })
    }
}

@Suite struct WaitableLockedTests {
    @Test func aWaiterWakesWhenTheValueSaysSo() throws {
        let state = WaitableLocked(0)
        let seen = Locked<Int?>(nil)
        let thread = try PushThread.start(name: "hapi-test-wait") {
            let value = state.wait(until: { $0 >= 3 }, then: { value -> Int in
                value += 10
                return value
            })
            seen.withLock { $0 = value }
        }
        for _ in 0..<3 {
            usleep(20_000)
            state.withLock { $0 += 1 }
            state.broadcast()
        }
        thread.join()
        #expect(seen.withLock { $0 } == 13)
        #expect(state.withLock { $0 } == 13)
    }
}
