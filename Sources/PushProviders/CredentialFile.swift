#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform

/// Reads a credential file (an APNs `.p8` key, a service-account JSON) without ever blocking or
/// slurping: a regular file only (a FIFO would wait for a writer forever, /dev/zero never
/// ends), at most 1 MiB (a credential is a few kilobytes). Errors name the setting and the path.
package enum CredentialFile {
    package static let maximumBytes = 1 << 20

    package static func read(_ path: String, setting: String) throws(PushCredentialError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            throw PushCredentialError.unreadable.with("\(setting): cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw PushCredentialError.unreadable.with("\(setting): cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            let what = (info.st_mode & S_IFMT) == S_IFDIR ? "a directory" : "not a regular file (a device or a pipe)"
            throw PushCredentialError.unreadable.with("\(setting): \(path) is \(what): give the path of the key file")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Platform.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw PushCredentialError.unreadable.with("\(setting): error reading \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > maximumBytes {
                throw PushCredentialError.malformed.with("\(setting): \(path) is larger than 1 MiB: not a credential file")
            }
        }
    }
}
