import CHapiPostgres
import DeviceRegistry

/// A libpq connection URL, checked without connecting, and its printable form.
struct PostgresURL {
    /// The URL with the password (in the user part or a `password=` parameter) as `***`.
    let redacted: String
    let password: String?

    init(_ url: String) throws(PushDeviceStoreError) {
        let lower = url.lowercased()
        guard lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://") else {
            throw PushDeviceStoreError.invalidDatabaseURL.with(
                "the device database URL must start with postgres:// or postgresql:// (libpq's URI form), got \"\(Self.shownScheme(url))\"")
        }
        redacted = Self.redact(url)
        // libpq's own parser decides what is valid; it does not connect.
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &error) else {
            let message = error.map { PostgresConnection.text($0) } ?? "out of memory"
            if let error { PQfreemem(error) }
            throw PushDeviceStoreError.invalidDatabaseURL.with("the device database URL \(redacted) is not valid: \(message)")
        }
        defer { PQconninfoFree(options) }
        var password: String?
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password", let value = option.pointee.val { password = String(cString: value) }
            option += 1
        }
        self.password = password
    }

    /// Only the scheme of something that is not a URL we accept (it could be a password).
    private static func shownScheme(_ text: String) -> String {
        if let range = text.firstRange(of: "://") { return String(text[..<range.lowerBound].prefix(20)) + "://…" }
        return text.count > 12 ? "…" : text
    }

    /// The URL with its password as `***` (`DatabaseURLRedaction`, shared with builds without PostgreSQL).
    static func redact(_ url: String) -> String { DatabaseURLRedaction.redact(url) }
}
