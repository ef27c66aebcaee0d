import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushEnvelope
import PushSync

/// The hub's `settings.json`: read, and written atomically with first-sight values.
///
/// Writes are atomic (a unique temporary file in the same directory, fsync, rename, fsync of
/// the directory), owner-only (file 0600, directory 0700), and serialized in-process by a mutex
/// and across processes by `flock` on `settings.json.lock`. A file that does not parse is never
/// overwritten. Keys this library does not know are kept as they are.
package struct SettingsFile: Sendable {
    package let path: String

    package init(directory: String) {
        path = HubDataDirectory.join(directory, "settings.json")
    }

    package init(path: String) {
        self.path = path
    }

    // Not Locked<Void>: ThreadSanitizer mistakes the zero-size value for the object header.
    private static let inProcess = Locked<Int>(0)

    /// The largest settings.json read: a few hundred bytes is usual; a bigger file is a mistake
    /// (or an attack) that would cost seconds and memory to parse.
    package static let maximumBytes = 1 << 20

    /// The file's top-level members, in the file's order (keys compared exactly, never merged);
    /// empty when the file does not exist. A symbolic link is followed.
    package func read() throws(PushSettingsFileError) -> [(key: String, value: JSONValue)] {
        guard let data = try readBytes() else { return [] }
        let value: JSONValue
        do {
            value = try JSONParser.parse(data)
        } catch {
            throw PushSettingsFileError.unparseable.with(
                "\(path) is not valid JSON (\(error.description)): fix or remove the file; it was left untouched")
        }
        guard let object = value.objectValue else {
            throw PushSettingsFileError.unparseable.with(
                "\(path) must hold a JSON object, not \(value.typeName): fix or remove the file; it was left untouched")
        }
        return object
    }

    /// The file's bytes; nil when it does not exist. Never blocks on a FIFO or reads a device.
    private func readBytes() throws(PushSettingsFileError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw PushSettingsFileError.unreadable.with(
                "cannot read \(path) (\(String(cString: strerror(errno)))): give the hub's user read access, or remove it")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw PushSettingsFileError.unreadable.with("\(path) is not a regular file: remove it, or replace it with a JSON file")
        }
        let tooLarge = PushSettingsFileError.tooLarge.with(
            "\(path) is larger than \(Self.maximumBytes / (1 << 20)) MiB: not a settings file; fix or remove it; it was left untouched")
        guard info.st_size <= Self.maximumBytes else { throw tooLarge }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Platform.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw PushSettingsFileError.unreadable.with("cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > Self.maximumBytes { throw tooLarge }
        }
    }

    /// A warning when anyone on the host may change the file (world-writable, or in a
    /// world-writable directory without the sticky bit): whoever writes it chooses where pushes go.
    package func permissionWarning() -> String? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        if info.st_mode & S_IWOTH != 0 {
            let mode = String(info.st_mode & 0o777, radix: 8)
            return "\(path) is world-writable (mode \(mode)): any user of this host can change where pushes go; chmod 600 it"
        }
        var directoryInfo = stat()
        if stat(directory, &directoryInfo) == 0, directoryInfo.st_mode & S_IWOTH != 0, directoryInfo.st_mode & S_ISVTX == 0 {
            return "\(directory) is world-writable: any user of this host can replace settings.json; chmod 700 it"
        }
        return nil
    }

    /// Adds `values` for keys absent from the file, keeping every existing key. Returns the
    /// keys written (none when all were present). Reads and writes under the lock, so two
    /// writers never lose each other's keys.
    @discardableResult
    package func addMissing(_ values: [String: String]) throws(PushSettingsFileError) -> [String] {
        try addMissingValues(values.mapValues { JSONValue.string($0) })
    }

    /// `addMissing` for values of any JSON type (the VAPID key pair is an object).
    @discardableResult
    package func addMissingValues(_ values: [String: JSONValue]) throws(PushSettingsFileError) -> [String] {
        guard !values.isEmpty else { return [] }
        return try SettingsFile.inProcess.withLock { _ throws(PushSettingsFileError) -> [String] in
            try withFileLock { () throws(PushSettingsFileError) -> [String] in
                var members = try read()
                let present = JSONValue.object(members)
                let added = values.keys.filter { present[$0] == nil }.sorted()
                guard !added.isEmpty else { return [] }
                let target = try writeTarget()
                removeAbandonedTemporaryFiles(target: target)
                for key in added { members.append((key: key, value: values[key] ?? .null)) }
                try writeAtomically(members, to: target)
                return added
            }
        }
    }

    /// Sets the members in `values` (a nil value removes the member), keeping every other key,
    /// under the same locks as `addMissingValues`. For an operator's deliberate change (a VAPID
    /// key rotation), never for first-sight defaults. `decide` sees the file's members first and
    /// returns the values to write, or nil to write nothing.
    package func replaceValues<T>(
        _ decide: ([(key: String, value: JSONValue)]) throws(PushSettingsFileError) -> (values: [String: JSONValue?], result: T)?
    ) throws(PushSettingsFileError) -> T? {
        try SettingsFile.inProcess.withLock { _ throws(PushSettingsFileError) -> T? in
            try withFileLock { () throws(PushSettingsFileError) -> T? in
                var members = try read()
                guard let (values, result) = try decide(members) else { return nil }
                for (key, value) in values.sorted(by: { $0.key < $1.key }) {
                    if let index = members.firstIndex(where: { $0.key == key }) {
                        if let value { members[index].value = value } else { members.remove(at: index) }
                    } else if let value {
                        members.append((key: key, value: value))
                    }
                }
                let target = try writeTarget()
                removeAbandonedTemporaryFiles(target: target)
                try writeAtomically(members, to: target)
                return result
            }
        }
    }

    /// Pretty JSON with sorted keys (two-space indent), as a person would edit it.
    static func render(_ value: JSONValue, indent: String = "") -> String {
        switch value {
        case .object(let members) where !members.isEmpty:
            let inner = indent + "  "
            let sorted = members.sorted { CanonicalJSON.jsKeyOrder($0.key, $1.key) }
            let lines = sorted.map { member -> String in
                inner + JSONValue.string(member.key).canonicalString + ": " + render(member.value, indent: inner)
            }
            return "{\n" + lines.joined(separator: ",\n") + "\n" + indent + "}"
        case .array(let elements) where !elements.isEmpty:
            let inner = indent + "  "
            return "[\n" + elements.map { inner + render($0, indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        default:
            return value.canonicalString
        }
    }

    private var directory: String {
        let url = URL(fileURLWithPath: path)
        return url.deletingLastPathComponent().path
    }

    private func withFileLock<T>(_ body: () throws(PushSettingsFileError) -> T) throws(PushSettingsFileError) -> T {
        try ensureDirectory()
        let lockPath = path + ".lock"
        let fd = open(lockPath, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw PushSettingsFileError.unwritable.with("cannot create lock file \(lockPath): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                throw PushSettingsFileError.unwritable.with("cannot lock \(lockPath): \(String(cString: strerror(errno)))")
            }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    private func ensureDirectory() throws(PushSettingsFileError) {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw PushSettingsFileError.unwritable.with("cannot create data directory \(directory): \(error.localizedDescription)")
        }
    }

    /// Temporary files left by a writer that died before its rename. Safe to delete while we
    /// hold the lock: no other writer can be between its temp write and its rename.
    private func removeAbandonedTemporaryFiles(target: String) {
        let url = URL(fileURLWithPath: target)
        let name = url.lastPathComponent + ".tmp-"
        let targetDirectory = url.deletingLastPathComponent().path
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: targetDirectory) else { return }
        for entry in entries where entry.hasPrefix(name) {
            unlink(HubDataDirectory.join(targetDirectory, entry))
        }
    }

    /// Where a write goes: the file itself, or, when settings.json is a symbolic link (a
    /// dotfiles manager's), the file it points to, so the link stays a link (write through).
    /// A link whose target cannot be resolved is refused: nothing is written.
    private func writeTarget() throws(PushSettingsFileError) -> String {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK else { return path }
        guard let resolved = realpath(path, nil) else {
            throw PushSettingsFileError.unwritable.with(
                "\(path) is a symbolic link whose target cannot be resolved (\(String(cString: strerror(errno)))): point it at a file, or replace it with one")
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Temp file in the same directory → write → fsync → rename over → fsync the directory.
    /// A crash at any point leaves either the old file or the new one, whole.
    private func writeAtomically(_ object: [(key: String, value: JSONValue)], to target: String) throws(PushSettingsFileError) {
        let bytes = Array((SettingsFile.render(.object(object)) + "\n").utf8)
        var template = Array((target + ".tmp-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkstemp($0) } ?? -1 }
        guard fd >= 0 else {
            throw PushSettingsFileError.unwritable.with("cannot create a temporary file beside \(target): \(String(cString: strerror(errno)))")
        }
        let temporaryPath = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var succeeded = false
        defer {
            if !succeeded { unlink(temporaryPath) }
        }
        fchmod(fd, 0o600)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress.map { $0 + offset }, bytes.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                close(fd)
                throw PushSettingsFileError.unwritable.with("cannot write \(temporaryPath): \(reason)")
            }
            offset += written
        }
        guard fsync(fd) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw PushSettingsFileError.unwritable.with("cannot flush \(temporaryPath): \(reason)")
        }
        close(fd)
        SettingsFile.beforeRenameHook.withLock { $0 }.run?()
        guard rename(temporaryPath, target) == 0 else {
            throw PushSettingsFileError.unwritable.with("cannot replace \(target): \(String(cString: strerror(errno)))")
        }
        succeeded = true
        let dirfd = open(URL(fileURLWithPath: target).deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            fsync(dirfd)
            close(dirfd)
        }
    }

    /// A struct around the closure: a bare function value in a generic box is re-thunked on access.
    private struct Hook: Sendable { var run: (@Sendable () -> Void)? }
    private static let beforeRenameHook = Locked(Hook(run: nil))

    /// For crash-consistency tests only: runs between the fsync of the temporary file and the
    /// rename, so a test child can kill itself at exactly that point. Nil in production.
    package static func _setBeforeRenameHookForTesting(_ hook: (@Sendable () -> Void)?) {
        beforeRenameHook.withLock { $0 = Hook(run: hook) }
    }
}
