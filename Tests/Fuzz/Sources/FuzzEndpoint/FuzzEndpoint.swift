import FuzzCheck
import PushEnvelope

/// The input is a Web Push endpoint URL. Besides not crashing: an accepted endpoint is https,
/// printable ASCII without a backslash or user info, at most 2,048 bytes, its host a DNS-sized
/// name or an IPv6 address, its port 1-65535 written in at most five digits; its origin is
/// `https://host[:port]` as written, and the origin with the path and query parses to the same
/// parts again.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let endpoint = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let parts = PushWebEndpoint.parse(endpoint) else {
        require(PushWebEndpoint.origin(of: endpoint) == nil, "an origin for a refused endpoint")
        return 0
    }
    let bytes = Array(endpoint.utf8)
    require(bytes.count <= PushWebEndpoint.maximumByteCount, "over 2,048 bytes accepted")
    require(bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }, "a space, control, non-ASCII or backslash byte accepted")
    require(endpoint.lowercased().hasPrefix("https://"), "not https")
    require((1...65535).contains(parts.port), "port \(parts.port)")
    if let written = parts.writtenPort {
        require(!written.isEmpty && written.count <= 5 && written.allSatisfy(\.isASCII) && Int(written) == parts.port, "port written \(written)")
    } else {
        require(parts.port == 443, "no port written but \(parts.port)")
    }
    require(!parts.host.isEmpty && parts.host == parts.host.lowercased(), "host not lower-cased or empty")
    require(!parts.host.contains("@") && !parts.host.contains("/"), "user info or a path in the host")
    if parts.isIPv6Literal {
        require(parts.host.count <= 45 && parts.host.contains(":"), "a bracketed host that is no IPv6 address")
    } else {
        require(parts.host.utf8.count <= 253, "a host over 253 characters")
    }
    require(parts.pathAndQuery.hasPrefix("/") && !parts.pathAndQuery.contains("#"), "path \(parts.pathAndQuery)")
    guard let origin = PushWebEndpoint.origin(of: endpoint) else { violated("no origin for an accepted endpoint") }
    let host = parts.isIPv6Literal ? "[\(parts.host)]" : parts.host
    require(origin == "https://" + host + (parts.writtenPort.map { ":" + $0 } ?? ""), "origin \(origin)")
    guard let again = PushWebEndpoint.parse(origin + parts.pathAndQuery) else { violated("the origin and path do not parse again") }
    require(again == parts, "the origin and path parse to other parts")
    return 0
}
