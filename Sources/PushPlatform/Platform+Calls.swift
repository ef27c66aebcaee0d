#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The C library's calls by a name of ours, for code whose own types have a `close`, `read`,
// `write` or `connect` of their own: elsewhere that code would have to qualify the call with
// the C library's module (`Glibc.close`), which names one system.
extension Platform {
    @discardableResult
    package static func close(_ fd: Int32) -> Int32 { closeCall(fd) }

    package static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { readCall(fd, buffer, count) }

    package static func write(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int { writeCall(fd, bytes, count) }

    /// `open(2)`; `mode` for a file it creates.
    package static func open(_ path: String, _ flags: Int32, _ mode: Int) -> Int32 { openCall(path, flags, mode_t(mode)) }

    /// `connect(2)`; `address` points at a `sockaddr` of `length` bytes.
    package static func connect(_ fd: Int32, _ address: UnsafeRawPointer?, _ length: UInt32) -> Int32 {
        connectCall(fd, address?.assumingMemoryBound(to: sockaddr.self), socklen_t(length))
    }

    @discardableResult
    package static func kill(_ process: Int32, _ signal: Int32) -> Int32 { killCall(process, signal) }
}

private func closeCall(_ fd: Int32) -> Int32 { close(fd) }
private func readCall(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(fd, buffer, count) }
private func writeCall(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, bytes, count) }
private func openCall(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func connectCall(_ fd: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 { connect(fd, address, length) }
private func killCall(_ process: Int32, _ signal: Int32) -> Int32 { kill(process, signal) }
