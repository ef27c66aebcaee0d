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

    /// `scheme://user:secret@host/db?password=secret&x=y` → `scheme://user:***@host/db?password=***&x=y`.
    static func redact(_ url: String) -> String {
        guard let schemeEnd = url.firstRange(of: "://") else { return "***" }
        let scheme = url[..<schemeEnd.upperBound]
        var rest = url[schemeEnd.upperBound...]
        var query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var authority = rest
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[slash...]
        }
        var shownAuthority = String(authority)
        if let at = authority.lastIndex(of: "@") {
            let user = authority[..<at]
            let host = authority[authority.index(after: at)...]
            if let colon = user.firstIndex(of: ":") {
                shownAuthority = String(user[..<colon]) + ":***@" + String(host)
            }
        }
        var result = String(scheme) + shownAuthority + String(path)
        if let query {
            let parameters = query.split(separator: "&", omittingEmptySubsequences: false).map { parameter -> String in
                let name = parameter.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                return name.lowercased() == "password" ? name + "=***" : String(parameter)
            }
            result += "?" + parameters.joined(separator: "&")
        }
        return result
    }
}
