import Foundation

/// Where a hub keeps its state (`settings.json`, the device database): `$HAPI_HOME`, or
/// `~/.hapi` where `~` is `$HOME`, as every Unix tool reads it.
package enum HubDataDirectory {
    /// Resolves the data directory from an environment (values trimmed, empty = unset).
    /// Returns nil only when neither `HAPI_HOME` nor `HOME` is set.
    package static func resolve(environment: [String: String]) -> String? {
        if let home = nonEmpty(environment["HAPI_HOME"]) {
            return expandTilde(home, environment: environment)
        }
        guard let userHome = nonEmpty(environment["HOME"]) else { return nil }
        return join(userHome, ".hapi")
    }

    /// Expands a leading `~` or `~/` to `$HOME`; other paths are returned as they are.
    package static func expandTilde(_ path: String, environment: [String: String]) -> String {
        guard path == "~" || path.hasPrefix("~/"), let home = nonEmpty(environment["HOME"]) else { return path }
        return path == "~" ? home : join(home, String(path.dropFirst(2)))
    }

    static func nonEmpty(_ value: String?) -> String? {
        guard let trimmed = value?.trimmingCharacters(in: .whitespacesAndNewlines), !trimmed.isEmpty else { return nil }
        return trimmed
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
