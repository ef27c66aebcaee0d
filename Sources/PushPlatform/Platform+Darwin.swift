#if canImport(Darwin)
import Darwin

// The calls only Darwin has. Not compiled on Linux, not even under `HAPI_PUSH_PORTABLE` (the
// README's "Building on macOS" lists this file); Platform+POSIX.swift is their counterpart.
extension Platform {
    /// Darwin has no `MSG_NOSIGNAL`: each socket carries `SO_NOSIGPIPE` instead.
    package static let sendFlags: Int32 = 0

    /// `SO_NOSIGPIPE`: a write to a peer gone is `EPIPE`, not SIGPIPE.
    package static func preventSignalOnWrite(_ socket: Int32) {
        var one: Int32 = 1
        _ = setsockopt(socket, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Names the calling thread (Darwin's one-argument `pthread_setname_np`).
    package static func nameThisThread(_ name: String) {
        _ = pthread_setname_np(name)
    }

    /// `pthread_create` as Darwin spells it: a pointer handle (nil until created), a
    /// non-optional argument.
    static func startThread(_ attributes: UnsafePointer<pthread_attr_t>, entry: UnsafeMutableRawPointer) -> Result<pthread_t, ThreadStartCode> {
        var thread: pthread_t?
        let rc = pthread_create(&thread, attributes, { raw in
            runThreadEntry(raw)
            return nil
        }, entry)
        guard rc == 0, let thread else { return .failure(ThreadStartCode(code: rc == 0 ? EAGAIN : rc)) }
        return .success(thread)
    }

    /// The calling thread's name ("" if unknown).
    package static func thisThreadName() -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        guard pthread_getname_np(pthread_self(), &buffer, buffer.count) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The calling thread's stack size in bytes.
    package static func thisThreadStackSize() -> Int {
        pthread_get_stacksize_np(pthread_self())
    }

    /// Whether `tcpBytesReceived` answers here: yes.
    package static let countsReceivedBytes = true

    /// Bytes the kernel has received on a TCP socket so far (`TCP_CONNECTION_INFO`), or -1.
    package static func tcpBytesReceived(_ socket: Int32) -> Int64 {
        var info = tcp_connection_info()
        var length = socklen_t(MemoryLayout<tcp_connection_info>.size)
        guard getsockopt(socket, IPPROTO_TCP, TCP_CONNECTION_INFO, &info, &length) == 0 else { return -1 }
        return Int64(clamping: info.tcpi_rxbytes)
    }
}
#endif
