import Foundation
import Glibc
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

    /// The file's top-level members, in the file's order (keys compared exactly, never merged);
    /// empty when the file does not exist.
    package func read() throws(PushSettingsFileError) -> [(key: String, value: JSONValue)] {
        guard let data = FileManager.default.contents(atPath: path) else {
            if FileManager.default.fileExists(atPath: path) {
                throw PushSettingsFileError.unreadable.with("cannot read \(path): give the hub's user read access, or remove it")
            }
            return []
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse([UInt8](data))
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

    /// Adds `values` for keys absent from the file, keeping every existing key. Returns the
    /// keys written (none when all were present). Reads and writes under the lock, so two
    /// writers never lose each other's keys.
    @discardableResult
    package func addMissing(_ values: [String: String]) throws(PushSettingsFileError) -> [String] {
        guard !values.isEmpty else { return [] }
        return try SettingsFile.inProcess.withLock { _ throws(PushSettingsFileError) -> [String] in
            try withFileLock { () throws(PushSettingsFileError) -> [String] in
                var members = try read()
                let present = JSONValue.object(members)
                let added = values.keys.filter { present[$0] == nil }.sorted()
                guard !added.isEmpty else { return [] }
                removeAbandonedTemporaryFiles()
                for key in added { members.append((key: key, value: .string(values[key] ?? ""))) }
                try writeAtomically(members)
                return added
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
    private func removeAbandonedTemporaryFiles() {
        let name = URL(fileURLWithPath: path).lastPathComponent + ".tmp-"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for entry in entries where entry.hasPrefix(name) {
            unlink(HubDataDirectory.join(directory, entry))
        }
    }

    /// Temp file in the same directory → write → fsync → rename over → fsync the directory.
    /// A crash at any point leaves either the old file or the new one, whole.
    private func writeAtomically(_ object: [(key: String, value: JSONValue)]) throws(PushSettingsFileError) {
        let bytes = Array((SettingsFile.render(.object(object)) + "\n").utf8)
        var template = Array((path + ".tmp-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkstemp($0) } ?? -1 }
        guard fd >= 0 else {
            throw PushSettingsFileError.unwritable.with("cannot create a temporary file beside \(path): \(String(cString: strerror(errno)))")
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
        guard rename(temporaryPath, path) == 0 else {
            throw PushSettingsFileError.unwritable.with("cannot replace \(path): \(String(cString: strerror(errno)))")
        }
        succeeded = true
        let dirfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
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
