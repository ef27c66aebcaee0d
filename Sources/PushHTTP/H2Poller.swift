#if os(Linux) && !HAPI_PUSH_PORTABLE
import CHapiLinux
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The HTTP/2 engine's two ties to the operating system: the readiness poller over every
// connection's socket, and the wake-up other threads write to. Two backends, chosen at build time:
//   - Linux: epoll and an eventfd (the default there);
//   - everywhere else, and on Linux built with `-DHAPI_PUSH_PORTABLE` (`make test-portable`):
//     poll(2) and a non-blocking pipe.
// Both are level-triggered; a descriptor's token is the connection's id, 0 is the wake-up.

#if os(Linux) && !HAPI_PUSH_PORTABLE

/// The interest and readiness bits, epoll's values.
enum H2Readiness {
    static let readable = UInt32(HAPI_EPOLL_IN)
    static let writable = UInt32(HAPI_EPOLL_OUT)
    static let error = UInt32(HAPI_EPOLL_ERR)
    static let hangup = UInt32(HAPI_EPOLL_HUP)
}

/// An epoll set. Loop thread only (after `make`); `mutating` as the poll(2) backend's are.
struct H2Poller: Sendable {
    /// The call named when `set` is refused.
    static let call = "epoll_ctl"
    private let fd: Int32

    /// A new set with `wake` registered under token 0.
    static func make(wake: H2Wakeup) throws(HTTPClientError) -> H2Poller {
        let fd = hapi_epoll_create()
        guard fd >= 0 else {
            throw HTTPClientError(.other, detail: "epoll_create1 failed: \(String(cString: strerror(errno)))")
        }
        var poller = H2Poller(fd: fd)
        guard poller.set(wake.readFD, events: H2Readiness.readable, token: 0, add: true) else {
            let detail = "epoll_ctl failed: \(String(cString: strerror(errno)))"
            poller.close()
            throw HTTPClientError(.other, detail: detail)
        }
        return poller
    }

    /// Adds `socket` (`add`) or changes its interest. False (errno set) if refused.
    mutating func set(_ socket: Int32, events: UInt32, token: UInt64, add: Bool) -> Bool {
        hapi_epoll_set(fd, socket, events, token, add ? 1 : 0) == 0
    }

    mutating func remove(_ socket: Int32) {
        _ = hapi_epoll_remove(fd, socket)
    }

    /// Waits at most `timeout` ms; writes each ready descriptor's token and readiness.
    mutating func wait(tokens: inout [UInt64], readiness: inout [UInt32], timeout: Int32) -> Int {
        Int(hapi_epoll_wait(fd, &tokens, &readiness, Int32(min(tokens.count, readiness.count)), timeout))
    }

    func close() {
        _ = closeDescriptor(fd)
    }
}

/// An eventfd: one descriptor, written with 8 bytes, read back to zero.
struct H2Wakeup: Sendable {
    let readFD: Int32

    static func make() throws(HTTPClientError) -> H2Wakeup {
        let fd = hapi_eventfd_create()
        guard fd >= 0 else {
            throw HTTPClientError(.other, detail: "eventfd failed: \(String(cString: strerror(errno)))")
        }
        return H2Wakeup(readFD: fd)
    }

    func wake() {
        var one: UInt64 = 1
        _ = write(readFD, &one, 8)
    }

    func drain() {
        var value: UInt64 = 0
        _ = read(readFD, &value, 8)
    }

    func close() {
        _ = closeDescriptor(readFD)
    }
}

#else

/// The interest and readiness bits, poll(2)'s values.
enum H2Readiness {
    static let readable = UInt32(UInt16(bitPattern: Int16(POLLIN)))
    static let writable = UInt32(UInt16(bitPattern: Int16(POLLOUT)))
    static let error = UInt32(UInt16(bitPattern: Int16(POLLERR)))
    static let hangup = UInt32(UInt16(bitPattern: Int16(POLLHUP)))
}

/// The descriptors poll(2) watches, kept between waits. Loop thread only (after `make`).
struct H2Poller: Sendable {
    static let call = "poll registration"
    private var descriptors: [pollfd] = []
    private var tokens: [UInt64] = []
    /// Where each descriptor stands in `descriptors`.
    private var slots: [Int32: Int] = [:]

    static func make(wake: H2Wakeup) throws(HTTPClientError) -> H2Poller {
        var poller = H2Poller()
        _ = poller.set(wake.readFD, events: H2Readiness.readable, token: 0, add: true)
        return poller
    }

    /// Adds `socket` or changes its interest; like epoll, adding one already there (or
    /// changing one that is not) is refused.
    mutating func set(_ socket: Int32, events: UInt32, token: UInt64, add: Bool) -> Bool {
        let interest = Int16(bitPattern: UInt16(truncatingIfNeeded: events & (H2Readiness.readable | H2Readiness.writable)))
        if let slot = slots[socket] {
            guard !add else {
                errno = EEXIST
                return false
            }
            descriptors[slot].events = interest
            tokens[slot] = token
        } else {
            guard add else {
                errno = ENOENT
                return false
            }
            slots[socket] = descriptors.count
            descriptors.append(pollfd(fd: socket, events: interest, revents: 0))
            tokens.append(token)
        }
        return true
    }

    mutating func remove(_ socket: Int32) {
        guard let slot = slots.removeValue(forKey: socket) else { return }
        let last = descriptors.count - 1
        if slot != last {
            descriptors[slot] = descriptors[last]
            tokens[slot] = tokens[last]
            slots[descriptors[slot].fd] = slot
        }
        descriptors.removeLast()
        tokens.removeLast()
    }

    /// Waits at most `timeout` ms; writes each ready descriptor's token and readiness.
    mutating func wait(tokens ready: inout [UInt64], readiness: inout [UInt32], timeout: Int32) -> Int {
        let count = descriptors.withUnsafeMutableBufferPointer { buffer in
            poll(buffer.baseAddress, nfds_t(buffer.count), timeout)
        }
        guard count > 0 else { return Int(count) }
        let capacity = min(ready.count, readiness.count)
        var found = 0
        for slot in descriptors.indices where descriptors[slot].revents != 0 && found < capacity {
            var bits = UInt32(UInt16(bitPattern: descriptors[slot].revents))
            // A descriptor poll(2) does not know: the connection reads, fails and closes.
            if descriptors[slot].revents & Int16(POLLNVAL) != 0 { bits |= H2Readiness.error }
            ready[found] = tokens[slot]
            readiness[found] = bits
            found += 1
        }
        return found
    }

    func close() {}
}

/// A non-blocking pipe: other threads write a byte to one end, the loop drains the other.
struct H2Wakeup: Sendable {
    let readFD: Int32
    let writeFD: Int32

    static func make() throws(HTTPClientError) -> H2Wakeup {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw HTTPClientError(.other, detail: "pipe failed: \(String(cString: strerror(errno)))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        return H2Wakeup(readFD: ends[0], writeFD: ends[1])
    }

    /// A full pipe (EAGAIN) already holds a wake-up: nothing is lost.
    func wake() {
        var one: UInt8 = 1
        _ = write(writeFD, &one, 1)
    }

    func drain() {
        var bytes = [UInt8](repeating: 0, count: 256)
        while true {
            let n = bytes.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
            if n < Int(bytes.count) { return }
        }
    }

    func close() {
        _ = closeDescriptor(readFD)
        _ = closeDescriptor(writeFD)
    }
}

#endif

/// `close(2)`, out of reach of the structs' own `close()`.
private func closeDescriptor(_ fd: Int32) -> Int32 {
    close(fd)
}
