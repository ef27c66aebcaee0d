import CHapiCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An HTTP CONNECT proxy every request to an origin goes through: `http://` (CONNECT over TCP)
/// or `https://` (TLS to the proxy, verified, then CONNECT inside it). The credentials are
/// kept apart from everything printable: `description` and `redacted` show `***`.
package struct HTTPProxy: Sendable, Hashable, CustomStringConvertible {
    /// `https://` proxy: TLS to the proxy itself.
    package let isTLS: Bool
    /// As in the URL, without IPv6 brackets.
    package let host: String
    package let port: Int
    /// Percent-decoded user name and password from the URL's user info (Basic).
    let user: String?
    let password: String?

    /// `http://proxy.corp:3128`, `https://user:secret@proxy:443`, or `proxy:3128` (http).
    /// A port missing is the scheme's (80, 443). SOCKS is refused (not supported).
    package init(url text: String) throws(HTTPClientError) {
        let trimmed = text.trimmingASCIIWhitespace()
        guard !trimmed.isEmpty, !trimmed.utf8.contains(where: { $0 < 0x21 || $0 == 0x7F }) else {
            throw HTTPClientError(.invalidConfiguration, detail: "the proxy URL is empty or has a space or control character")
        }
        let withScheme = trimmed.contains("://") ? trimmed : "http://" + trimmed
        let givenScheme = String(withScheme.prefix { $0 != ":" }).lowercased()
        guard givenScheme == "http" || givenScheme == "https" else {
            throw HTTPClientError(
                .invalidConfiguration,
                detail: "the proxy URL's scheme \(HTTPProxy.printable(givenScheme)) is not supported: use http:// or https:// (CONNECT); SOCKS is not supported")
        }
        guard let handle = curl_url() else { throw HTTPClientError(.other, detail: "curl_url failed (out of memory)") }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, withScheme, 0) == CURLUE_OK else {
            throw HTTPClientError(.invalidConfiguration, detail: "the proxy URL \(Self.redact(withScheme)) is not a valid URL")
        }
        func part(_ which: CURLUPart, _ flags: UInt32 = 0) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard curl_url_get(handle, which, &value, flags) == CURLUE_OK, let value else { return nil }
            defer { curl_free(value) }
            return String(cString: value)
        }
        let scheme = part(CURLUPART_SCHEME)?.lowercased() ?? givenScheme
        guard var host = part(CURLUPART_HOST), !host.isEmpty else {
            throw HTTPClientError(.invalidConfiguration, detail: "the proxy URL \(Self.redact(withScheme)) has no host")
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = part(CURLUPART_PORT).flatMap { Int($0) } ?? (scheme == "https" ? 443 : 80)
        guard (1...65535).contains(port) else {
            throw HTTPClientError(.invalidConfiguration, detail: "the proxy URL \(Self.redact(withScheme)) has no valid port")
        }
        isTLS = scheme == "https"
        self.host = host.lowercased()
        self.port = port
        let decode = UInt32(CURLU_URLDECODE)
        user = part(CURLUPART_USER, decode)
        password = part(CURLUPART_PASSWORD, decode)
    }

    /// `http://host:port` for libcurl's `CURLOPT_PROXY`: credentials go separately.
    var curlURL: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return "\(isTLS ? "https" : "http")://\(name):\(port)"
    }

    var hasCredentials: Bool { user != nil || password != nil }

    /// The proxy as it may be printed: `http://user:***@host:port`.
    package var description: String {
        let name = host.contains(":") ? "[\(host)]" : host
        let userInfo = hasCredentials ? "\(Self.printable(user ?? "")):***@" : ""
        return "\(isTLS ? "https" : "http")://\(userInfo)\(name):\(port)"
    }

    /// `text` (a proxy URL as given) with any password replaced by `***`, for messages about
    /// a URL that did not parse.
    package static func redact(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var authorityStart = 0
        if let colon = bytes.firstIndex(of: UInt8(ascii: ":")), bytes[colon...].starts(with: "://".utf8) { authorityStart = colon + 3 }
        // The last "@" anywhere: a password may hold an unencoded "/" or "@" (a proxy URL has
        // no use for a path).
        guard let at = bytes[authorityStart...].lastIndex(of: UInt8(ascii: "@")) else { return text }
        let userInfo = bytes[authorityStart..<at]
        let userEnd = userInfo.firstIndex(of: UInt8(ascii: ":")) ?? at
        let user = String(decoding: bytes[authorityStart..<userEnd], as: UTF8.self)
        let head = String(decoding: bytes[..<authorityStart], as: UTF8.self)
        let rest = String(decoding: bytes[at...], as: UTF8.self)
        return head + printable(user) + ":***" + rest
    }

    private static func printable(_ text: String) -> String {
        String(text.unicodeScalars.prefix(64).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
    }
}

/// Which proxy each origin's requests take, decided as curl and Go read the environment:
/// `https_proxy`/`HTTPS_PROXY` for `https` origins, `http_proxy`/`HTTP_PROXY` for `http` ones
/// (never `HTTP_PROXY` for `https`), `all_proxy`/`ALL_PROXY` as the fallback, and
/// `no_proxy`/`NO_PROXY` for the exceptions; the lower-case spelling wins. A setting given
/// here (`httpsProxy`, `noProxy`) replaces the environment's; an empty `httpsProxy` means
/// "direct", whatever the environment says.
package struct HTTPProxyConfiguration: Sendable {
    /// The proxy for `https` origins; nil = the environment's, "" = none.
    package var httpsProxy: String?
    /// The exceptions; nil = the environment's, "" = none.
    package var noProxy: String?
    /// The variables read (the process environment unless a test gives its own).
    package var environment: [String: String]
    /// What the two settings are called where they were set, for messages (the relay's are
    /// `RELAY_HTTPS_PROXY`, `RELAY_NO_PROXY`).
    package var settingNames = (httpsProxy: "httpsProxy", noProxy: "noProxy")

    package init(httpsProxy: String? = nil, noProxy: String? = nil, environment: [String: String]? = nil) {
        self.httpsProxy = httpsProxy
        self.noProxy = noProxy
        self.environment = environment ?? Self.processEnvironment()
    }

    /// Only the variables that matter here, from the process environment.
    package static func processEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        for name in variableNames {
            if let value = getenv(name) { result[name] = String(cString: value) }
        }
        return result
    }

    package static let variableNames = [
        "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
    ]

    /// The first non-empty value among `names`, and the name it came from.
    private func variable(_ names: [String]) -> (String, String)? {
        for name in names {
            if let value = environment[name], !value.trimmingASCIIWhitespace().isEmpty { return (name, value) }
        }
        return nil
    }

    /// The proxy text for an origin's scheme and where it came from, or nil for none.
    func proxySource(isTLS: Bool) -> (source: String, url: String)? {
        if isTLS, let httpsProxy {
            return httpsProxy.trimmingASCIIWhitespace().isEmpty ? nil : (settingNames.httpsProxy, httpsProxy)
        }
        let names = isTLS ? ["https_proxy", "HTTPS_PROXY"] : ["http_proxy", "HTTP_PROXY"]
        if let (name, value) = variable(names + ["all_proxy", "ALL_PROXY"]) { return (name, value) }
        return nil
    }

    /// The exception list and where it came from.
    func noProxySource() -> (source: String, list: String)? {
        if let noProxy { return (settingNames.noProxy, noProxy) }
        if let (name, value) = variable(["no_proxy", "NO_PROXY"]) { return (name, value) }
        return nil
    }

    /// Checks every proxy URL this configuration can produce.
    package func validated() throws(HTTPClientError) {
        for isTLS in [true, false] {
            if let (source, url) = proxySource(isTLS: isTLS) {
                do throws(HTTPClientError) {
                    _ = try HTTPProxy(url: url)
                } catch {
                    throw HTTPClientError(.invalidConfiguration, detail: "\(source): \(error.detail ?? "invalid proxy URL")")
                }
            }
        }
    }

    /// Where requests to `url` go, and why; nil for a URL that is not absolute http(s).
    package func route(forURL url: String) -> HTTPProxyRoute? {
        guard let origin = try? HTTPRoute.parse(url).origin else { return nil }
        return route(isTLS: origin.isTLS, host: origin.host, port: origin.port)
    }

    /// Where requests to `scheme://host:port` go, and why.
    package func route(isTLS: Bool, host: String, port: Int) -> HTTPProxyRoute {
        guard let (source, url) = proxySource(isTLS: isTLS) else {
            if isTLS, let httpsProxy, httpsProxy.trimmingASCIIWhitespace().isEmpty { return .direct(reason: "\(settingNames.httpsProxy) is empty") }
            return .direct(reason: "no proxy configured")
        }
        if let (listSource, list) = noProxySource(), let entry = NoProxyList(list).match(host: host, port: port) {
            return .direct(reason: "\(listSource) matches \(entry)")
        }
        do throws(HTTPClientError) {
            return .proxy(try HTTPProxy(url: url), source: source)
        } catch {
            return .invalid(HTTPClientError(.invalidConfiguration, detail: "\(source): \(error.detail ?? "invalid proxy URL")"))
        }
    }
}

/// The decision for one origin.
package enum HTTPProxyRoute: Sendable, Hashable, CustomStringConvertible {
    case direct(reason: String)
    case proxy(HTTPProxy, source: String)
    /// A proxy is configured but its URL is unusable: requests fail rather than bypass it.
    case invalid(HTTPClientError)

    package var proxy: HTTPProxy? {
        if case .proxy(let proxy, _) = self { return proxy }
        return nil
    }

    package var description: String {
        switch self {
        case .direct(let reason): "direct (\(reason))"
        case .proxy(let proxy, let source): "\(proxy) (\(source))"
        case .invalid(let error): "invalid proxy: \(error.detail ?? error.description)"
        }
    }
}

/// `NO_PROXY` as curl and Go read it: comma-separated entries, each `*` (everything), a host
/// name (that name and its subdomains; a leading `.` or `*.` changes nothing), an IP address,
/// a CIDR block, any of them with `:port` to match that port only. Case-insensitive; a
/// trailing dot is ignored.
struct NoProxyList {
    private let entries: [String]

    init(_ list: String) {
        entries = list.split(separator: ",").map { String($0).trimmingASCIIWhitespace() }.filter { !$0.isEmpty }
    }

    /// The entry that sends `host:port` direct, or nil.
    func match(host rawHost: String, port: Int) -> String? {
        let host = Self.normalize(rawHost)
        let hostAddress = IPAddress(host)
        for entry in entries {
            if entry == "*" { return entry }
            var pattern = entry.lowercased()
            var entryPort: Int?
            // "[v6]:port", "[v6]", "name:port", "v4:port"; a bare IPv6 address has several colons.
            if pattern.hasPrefix("[") {
                guard let close = pattern.firstIndex(of: "]") else { continue }
                let after = pattern[pattern.index(after: close)...]
                if after.hasPrefix(":") { entryPort = Int(after.dropFirst()) }
                pattern = String(pattern[pattern.index(after: pattern.startIndex)..<close])
            } else if pattern.filter({ $0 == ":" }).count == 1, let colon = pattern.firstIndex(of: ":") {
                entryPort = Int(pattern[pattern.index(after: colon)...])
                pattern = String(pattern[..<colon])
            }
            if let entryPort, entryPort != port { continue }
            if let slash = pattern.firstIndex(of: "/") {
                if let hostAddress, let network = IPAddress(String(pattern[..<slash])), let bits = Int(pattern[pattern.index(after: slash)...]),
                    hostAddress.isIn(network, prefixLength: bits)
                {
                    return entry
                }
                continue
            }
            if let address = IPAddress(pattern) {
                if address == hostAddress { return entry }
                continue
            }
            if pattern.hasPrefix("*.") { pattern.removeFirst(2) } else if pattern.hasPrefix(".") { pattern.removeFirst() }
            pattern = Self.normalize(pattern)
            guard !pattern.isEmpty else { continue }
            if host == pattern || host.hasSuffix("." + pattern) { return entry }
        }
        return nil
    }

    private static func normalize(_ host: String) -> String {
        var host = host.lowercased()
        while host.hasSuffix(".") { host.removeLast() }
        return host
    }
}

/// An IPv4 or IPv6 address as bytes, for NO_PROXY's address and CIDR entries.
struct IPAddress: Equatable {
    let bytes: [UInt8]

    init?(_ text: String) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: v4) { Array($0) }
        } else if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: v6) { Array($0) }
        } else {
            return nil
        }
    }

    func isIn(_ network: IPAddress, prefixLength: Int) -> Bool {
        guard bytes.count == network.bytes.count, prefixLength >= 0, prefixLength <= bytes.count * 8 else { return false }
        var remaining = prefixLength
        for index in 0..<bytes.count where remaining > 0 {
            let take = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
            if bytes[index] & mask != network.bytes[index] & mask { return false }
            remaining -= take
        }
        return true
    }
}

extension String {
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
