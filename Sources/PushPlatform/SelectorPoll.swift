#if !os(Linux) || HAPI_PUSH_PORTABLE
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// This build's selector and wake-up: poll(2) and a pipe.
package typealias PlatformSelectorBackend = PollSelector
package typealias PlatformWakeupBackend = PipeWakeup

/// The descriptors poll(2) watches, kept between waits.
package struct PollSelector: PlatformSelector {
    package static let registrationCall = "poll registration"
    package static let readable = UInt32(UInt16(bitPattern: Int16(POLLIN)))
    package static let writable = UInt32(UInt16(bitPattern: Int16(POLLOUT)))
    package static let error = UInt32(UInt16(bitPattern: Int16(POLLERR)))
    package static let hangup = UInt32(UInt16(bitPattern: Int16(POLLHUP)))

    private var descriptors: [pollfd] = []
    private var tokens: [UInt64] = []
    /// Where each descriptor stands in `descriptors`.
    private var slots: [Int32: Int] = [:]

    package static func make() throws(PlatformError) -> PollSelector {
        PollSelector()
    }

    /// Like epoll, adding one already there (or changing one that is not) is refused.
    package mutating func set(_ socket: Int32, events: UInt32, token: UInt64, add: Bool) -> Bool {
        let interest = Int16(bitPattern: UInt16(truncatingIfNeeded: events & (Self.readable | Self.writable)))
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

    package mutating func remove(_ socket: Int32) {
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

    package mutating func wait(tokens ready: inout [UInt64], readiness: inout [UInt32], timeout: Int32) -> Int {
        let count = descriptors.withUnsafeMutableBufferPointer { buffer in
            poll(buffer.baseAddress, nfds_t(buffer.count), timeout)
        }
        guard count > 0 else { return Int(count) }
        let capacity = min(ready.count, readiness.count)
        var found = 0
        for slot in descriptors.indices where descriptors[slot].revents != 0 && found < capacity {
            var bits = UInt32(UInt16(bitPattern: descriptors[slot].revents))
            // A descriptor poll(2) does not know: its owner reads, fails and closes it.
            if descriptors[slot].revents & Int16(POLLNVAL) != 0 { bits |= Self.error }
            ready[found] = tokens[slot]
            readiness[found] = bits
            found += 1
        }
        return found
    }

    package func close() {}
}

/// A non-blocking pipe: other threads write a byte to one end, the owner drains the other.
package struct PipeWakeup: PlatformWakeup {
    package let readFD: Int32
    let writeFD: Int32

    package static func make() throws(PlatformError) -> PipeWakeup {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw PlatformError.last("pipe") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        return PipeWakeup(readFD: ends[0], writeFD: ends[1])
    }

    /// A full pipe (EAGAIN) already holds a wake-up: nothing is lost.
    package func wake() {
        var one: UInt8 = 1
        _ = write(writeFD, &one, 1)
    }

    package func drain() {
        var bytes = [UInt8](repeating: 0, count: 256)
        while true {
            let n = bytes.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
            if n < Int(bytes.count) { return }
        }
    }

    package func close() {
        _ = closeDescriptor(readFD)
        _ = closeDescriptor(writeFD)
    }
}

/// `close(2)`, out of reach of the structs' own `close()`.
private func closeDescriptor(_ fd: Int32) -> Int32 {
    close(fd)
}
#endif
