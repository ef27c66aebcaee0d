import Foundation
import FuzzCheck
import PushNative

/// One scratch data directory per process (no settings.json: the environment is the input).
let directory: String = {
    let path = NSTemporaryDirectory() + "hapi-fuzz-url-\(getpid())"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}()

/// The input, split at newlines, is the relay URL, the APNs endpoint and the FCM endpoint. Besides
/// not crashing: whatever configuration loading accepts as a base URL has no query, fragment or
/// user info, a port in 1-65535, and is https (or http to loopback); a password in any of them
/// is never shown.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let parts = text.split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
    var environment = ["HOME": directory, "HAPI_IOS_PUSH": "relay", "HAPI_ANDROID_PUSH": "relay"]
    environment["HAPI_PUSH_RELAY_URL"] = parts[0]
    if parts.count > 1 { environment["HAPI_APNS_ENDPOINT"] = parts[1] }
    if parts.count > 2 { environment["HAPI_FCM_ENDPOINT"] = parts[2] }
    let configuration: PushConfiguration
    do {
        configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: false)
    } catch {
        violated("load threw without a settings.json: \(error)")
    }
    for accepted in [configuration.relayURL, configuration.fcmEndpoint] where !accepted.isEmpty {
        check(accepted)
    }
    require((configuration.ios.transport.name == "relay") == !configuration.relayURL.isEmpty, "relay chosen without a relay URL")
    let shown = configuration.description + String(decoding: configuration.jsonValue.canonicalBytes, as: UTF8.self)
    for part in parts {
        // A password whose `:password@` also appears outside its authority (in a path, or in
        // another input that is no URL) is not told apart from that text, shown as it is.
        if let password = password(in: part), password.count >= 3, password != "***",
           text.components(separatedBy: ":" + password + "@").count == 2 {
            require(!shown.contains(":" + password + "@"), "a URL password is shown: \(password)")
        }
    }
    return 0
}

/// The rules a base URL that was accepted must obey.
func check(_ url: String) {
    let lower = url.lowercased()
    require(lower.hasPrefix("https://") || lower.hasPrefix("http://"), "accepted a non-http(s) URL: \(url)")
    require(!url.contains("?") && !url.contains("#"), "accepted a query or fragment: \(url)")
    require(url.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "accepted a control, space or non-ASCII byte: \(url)")
    let rest = url.drop { $0 != ":" }.dropFirst(3)
    let authority = rest.prefix { $0 != "/" }
    require(!authority.contains("@"), "accepted user info: \(url)")
    require(!authority.isEmpty, "accepted an empty host: \(url)")
    if lower.hasPrefix("http://") {
        var host = String(authority)
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            host = String(host[host.index(after: host.startIndex)..<close])
        } else if let colon = host.lastIndex(of: ":") {
            host = String(host[..<colon])
        }
        host = host.lowercased()
        let loopback = host == "localhost" || host.hasSuffix(".localhost") || host == "::1" || host.hasPrefix("127.")
        require(loopback, "accepted cleartext to a non-loopback host: \(url)")
    }
    if !authority.hasPrefix("["), let colon = authority.lastIndex(of: ":") {
        let port = authority[authority.index(after: colon)...]
        require(Int(port).map { (1...65535).contains($0) } ?? false, "accepted port \(port): \(url)")
    }
}

/// The password of `user:password@` in a URL's authority, if any.
func password(in url: String) -> String? {
    guard let scheme = url.range(of: "://") else { return nil }
    let rest = url[scheme.upperBound...]
    let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    guard let at = authority.lastIndex(of: "@") else { return nil }
    let userInfo = authority[..<at]
    guard let colon = userInfo.firstIndex(of: ":") else { return nil }
    return String(userInfo[userInfo.index(after: colon)...])
}
