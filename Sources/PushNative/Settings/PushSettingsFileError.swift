/// Why settings.json could not be used. Names the file and says what to do.
public struct PushSettingsFileError: Error, Sendable, Hashable, CustomStringConvertible {
    enum Code: Sendable, Hashable { case unparseable, unreadable, unwritable, tooLarge }
    let code: Code
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func == (lhs: PushSettingsFileError, rhs: PushSettingsFileError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
    public var description: String { message }

    /// The file is not a JSON object; it was left untouched.
    public static let unparseable = PushSettingsFileError(.unparseable, "settings.json does not parse")
    /// The file exists but cannot be read.
    public static let unreadable = PushSettingsFileError(.unreadable, "settings.json is unreadable")
    /// The file is larger than `SettingsFile.maximumBytes` (1 MiB): not a settings file; it was
    /// left untouched.
    public static let tooLarge = PushSettingsFileError(.tooLarge, "settings.json is too large")
    /// The file or its directory cannot be written.
    public static let unwritable = PushSettingsFileError(.unwritable, "settings.json cannot be written")

    func with(_ message: String) -> PushSettingsFileError { PushSettingsFileError(code, message) }
}
