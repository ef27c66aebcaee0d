/// A database URL as it may be printed: its password (in the user part or a `password=`
/// parameter) replaced by `***`. Plain text work, no libpq, so a hub built without the
/// PostgreSQL registry still never shows the password of a `HAPI_PUSH_DATABASE_URL` it refuses.
package enum DatabaseURLRedaction {
    /// `scheme://user:secret@host/db?password=secret&x=y` → `scheme://user:***@host/db?password=***&x=y`.
    package static func redact(_ url: String) -> String {
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
