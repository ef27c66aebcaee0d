#if os(Linux) && !HAPI_PUSH_PORTABLE
import CHapiEpoll
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// This build's selector and wake-up: epoll and an eventfd.
package typealias PlatformSelectorBackend = EpollSelector
package typealias PlatformWakeupBackend = EventFDWakeup

/// An epoll set.
package struct EpollSelector: PlatformSelector {
    package static let registrationCall = "epoll_ctl"
    package static let readable = UInt32(HAPI_EPOLL_IN)
    package static let writable = UInt32(HAPI_EPOLL_OUT)
    package static let error = UInt32(HAPI_EPOLL_ERR)
    package static let hangup = UInt32(HAPI_EPOLL_HUP)

    private let fd: Int32

    package static func make() throws(PlatformError) -> EpollSelector {
        let fd = hapi_epoll_create()
        guard fd >= 0 else { throw PlatformError.last("epoll_create1") }
        return EpollSelector(fd: fd)
    }

    package mutating func set(_ socket: Int32, events: UInt32, token: UInt64, add: Bool) -> Bool {
        hapi_epoll_set(fd, socket, events, token, add ? 1 : 0) == 0
    }

    package mutating func remove(_ socket: Int32) {
        _ = hapi_epoll_remove(fd, socket)
    }

    package mutating func wait(tokens: inout [UInt64], readiness: inout [UInt32], timeout: Int32) -> Int {
        Int(hapi_epoll_wait(fd, &tokens, &readiness, Int32(min(tokens.count, readiness.count)), timeout))
    }

    package func close() {
        _ = closeDescriptor(fd)
    }
}

/// An eventfd: one descriptor, written with 8 bytes, read back to zero.
package struct EventFDWakeup: PlatformWakeup {
    package let readFD: Int32

    package static func make() throws(PlatformError) -> EventFDWakeup {
        let fd = hapi_eventfd_create()
        guard fd >= 0 else { throw PlatformError.last("eventfd") }
        return EventFDWakeup(readFD: fd)
    }

    package func wake() {
        var one: UInt64 = 1
        _ = write(readFD, &one, 8)
    }

    package func drain() {
        var value: UInt64 = 0
        _ = read(readFD, &value, 8)
    }

    package func close() {
        _ = closeDescriptor(readFD)
    }
}

/// `close(2)`, out of reach of the structs' own `close()`.
private func closeDescriptor(_ fd: Int32) -> Int32 {
    close(fd)
}
#endif
