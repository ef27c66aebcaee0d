import Foundation

/// Reads what an option names: a file, or standard input for `-`. Bounded, because whatever
/// is read is then parsed and may be printed back.
enum InputFile {
    static let maximumBytes = 1 << 20

    static func read(_ path: String, option: String) throws(UsageError) -> [UInt8] {
        let data: Data?
        if path == "-" {
            data = try? FileHandle.standardInput.read(upToCount: maximumBytes + 1) ?? Data()
        } else {
            guard let handle = FileHandle(forReadingAtPath: path) else { throw UsageError("--\(option): cannot read '\(path)'") }
            defer { try? handle.close() }
            data = try? handle.read(upToCount: maximumBytes + 1) ?? Data()
        }
        guard let data else { throw UsageError("--\(option): cannot read '\(path)'") }
        guard data.count <= maximumBytes else { throw UsageError("--\(option): '\(path)' is larger than 1 MiB (\(maximumBytes) bytes)") }
        return [UInt8](data)
    }
}
