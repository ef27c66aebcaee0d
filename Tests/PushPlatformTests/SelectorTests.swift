#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import Testing

/// The platform's selector and wake-up (what the HTTP/2 engine's loop waits in), on whichever
/// backend this build has: epoll and an eventfd by default on Linux, poll(2) and a pipe
/// elsewhere and with `-DHAPI_PUSH_PORTABLE` (`make test-portable`). Real descriptors: a
/// socket pair stands in for a connection.
@Suite struct SelectorTests {
    @Test func theBuildHasTheBackendItAskedFor() {
        #if os(Linux) && !HAPI_PUSH_PORTABLE
        #expect(PlatformSelectorBackend.registrationCall == "epoll_ctl")
        #expect(PlatformSelectorBackend.self == EpollSelector.self && PlatformWakeupBackend.self == EventFDWakeup.self)
        #else
        #expect(PlatformSelectorBackend.registrationCall == "poll registration")
        #expect(PlatformSelectorBackend.self == PollSelector.self && PlatformWakeupBackend.self == PipeWakeup.self)
        #endif
    }

    @Test func wakesAndReportsReadinessByToken() throws {
        let wakeup = try PlatformWakeupBackend.make()
        defer { wakeup.close() }
        var poller = try PlatformSelectorBackend.make(wake: wakeup)
        defer { poller.close() }
        var tokens = [UInt64](repeating: 0, count: 8)
        var readiness = [UInt32](repeating: 0, count: 8)
        func waitReady(_ timeout: Int32) -> Int { poller.wait(tokens: &tokens, readiness: &readiness, timeout: timeout) }
        func set(_ fd: Int32, _ events: UInt32, add: Bool) -> Bool { poller.set(fd, events: events, token: 7, add: add) }

        // Nothing ready: the wait times out.
        #expect(waitReady(10) == 0)

        // A wake-up (twice: still one readiness), then drained: quiet again.
        wakeup.wake()
        wakeup.wake()
        #expect(waitReady(1000) == 1)
        #expect(tokens[0] == 0 && readiness[0] & PlatformReadiness.readable != 0)
        wakeup.drain()
        #expect(waitReady(10) == 0)

        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Platform.streamSocketType, 0, &pair) == 0)
        defer { for fd in pair { _ = close(fd) } }

        // Writable at once; readable only once the peer writes.
        #expect(set(pair[0], PlatformReadiness.writable, add: true))
        #expect(!set(pair[0], PlatformReadiness.writable, add: true), "added twice")
        #expect(waitReady(1000) == 1)
        #expect(tokens[0] == 7 && readiness[0] & PlatformReadiness.writable != 0)
        #expect(set(pair[0], PlatformReadiness.readable, add: false))
        #expect(waitReady(10) == 0)
        var byte: UInt8 = 1
        #expect(write(pair[1], &byte, 1) == 1)
        #expect(waitReady(1000) == 1)
        #expect(tokens[0] == 7 && readiness[0] & PlatformReadiness.readable != 0)

        // The peer gone: reported as readable or hang-up, which the connection reads and closes on.
        _ = close(pair[1])
        pair[1] = -1
        #expect(waitReady(1000) == 1)
        #expect(readiness[0] & (PlatformReadiness.readable | PlatformReadiness.hangup) != 0)

        // Removed: never reported again, and changing it is refused.
        poller.remove(pair[0])
        #expect(waitReady(10) == 0)
        #expect(!set(pair[0], PlatformReadiness.readable, add: false))
    }
}
