#if !canImport(Darwin)
import CHapiPlatform
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Every system but Darwin (whose calls are in Platform+Darwin.swift): Linux's, through
// CHapiPlatform, which answers "unknown" on a system with none of them.
extension Platform {
    /// What every `send(2)` of ours adds: `MSG_NOSIGNAL`, so a peer gone is `EPIPE` per write.
    package static let sendFlags = Int32(MSG_NOSIGNAL)

    /// Nothing to set on the socket here: `sendFlags` keeps SIGPIPE away on each write.
    package static func preventSignalOnWrite(_ socket: Int32) {}

    /// Names the calling thread (`pthread_setname_np(thread, name)`; the kernel keeps 15 bytes).
    package static func nameThisThread(_ name: String) {
        hapi_name_this_thread(name)
    }

    /// `pthread_create` as glibc and musl spell it: an integer handle, an optional argument.
    static func startThread(_ attributes: UnsafePointer<pthread_attr_t>, entry: UnsafeMutableRawPointer) -> Result<pthread_t, ThreadStartCode> {
        var thread = pthread_t()
        let rc = pthread_create(&thread, attributes, { raw in
            if let raw { runThreadEntry(raw) }
            return nil
        }, entry)
        return rc == 0 ? .success(thread) : .failure(ThreadStartCode(code: rc))
    }

    /// The calling thread's name ("" if unknown).
    package static func thisThreadName() -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        hapi_this_thread_name(&buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The calling thread's stack size in bytes (0 if unknown).
    package static func thisThreadStackSize() -> Int {
        Int(hapi_this_thread_stack_size())
    }

    /// Whether `tcpBytesReceived` answers here (Linux: yes).
    package static let countsReceivedBytes = HAPI_COUNTS_TCP_BYTES != 0

    /// Bytes the kernel has received on a TCP socket so far (`TCP_INFO` on Linux), or -1 where
    /// the system does not say: then the relay's guard sees a request only once it is whole.
    package static func tcpBytesReceived(_ socket: Int32) -> Int64 {
        Int64(hapi_tcp_bytes_received(socket))
    }
}
#endif
