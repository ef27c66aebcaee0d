#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension Platform {
    /// `SOCK_STREAM` as `socket(2)` and `getaddrinfo` take it (a C enum's case on glibc, a plain
    /// constant elsewhere).
    #if canImport(Glibc)
    package static let streamSocketType = Int32(SOCK_STREAM.rawValue)
    #else
    package static let streamSocketType = Int32(SOCK_STREAM)
    #endif

    /// A stream socket of `family`, close-on-exec and non-blocking unless asked otherwise, whose
    /// writes with `sendFlags` fail with `EPIPE` instead of raising SIGPIPE once the peer is
    /// gone. -1 (errno set) if the system refuses one.
    ///
    /// Linux sets both flags in the one `socket(2)` call (`SOCK_NONBLOCK`, `SOCK_CLOEXEC`), so
    /// no other thread's `fork` sees the descriptor inheritable; elsewhere, and under
    /// `HAPI_PUSH_PORTABLE`, `fcntl` sets them just after.
    package static func makeStreamSocket(family: Int32, nonBlocking: Bool = true, closeOnExec: Bool = true) -> Int32 {
        #if os(Linux) && !HAPI_PUSH_PORTABLE
        let type = streamSocketType | (nonBlocking ? linuxSocketNonBlocking : 0) | (closeOnExec ? linuxSocketCloseOnExec : 0)
        return socket(family, type, 0)
        #else
        let fd = socket(family, streamSocketType, 0)
        guard fd >= 0 else { return fd }
        if closeOnExec { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        if nonBlocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        preventSignalOnWrite(fd)
        return fd
        #endif
    }

    /// `send(2)` with `sendFlags`: a peer gone is `EPIPE`, never SIGPIPE.
    package static func send(_ socket: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, flags: Int32 = 0) -> Int {
        sendCall(socket, bytes, count, sendFlags | flags)
    }
}

#if os(Linux) && !HAPI_PUSH_PORTABLE
#if canImport(Glibc)
private let linuxSocketNonBlocking = Int32(SOCK_NONBLOCK.rawValue)
private let linuxSocketCloseOnExec = Int32(SOCK_CLOEXEC.rawValue)
#else
private let linuxSocketNonBlocking = Int32(SOCK_NONBLOCK)
private let linuxSocketCloseOnExec = Int32(SOCK_CLOEXEC)
#endif
#else
// Elsewhere `fcntl` sets the flags after `socket(2)` (makeStreamSocket).
#endif

/// The C library's `send(2)`, out of reach of `Platform.send`'s own name.
private func sendCall(_ socket: Int32, _ bytes: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    send(socket, bytes, count, flags)
}
