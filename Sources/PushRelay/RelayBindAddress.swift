import CHapiMicrohttpd
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a listener binds: an IPv4 or IPv6 literal (or `localhost`, meaning 127.0.0.1) and a
/// port, as the `sockaddr` libmicrohttpd takes. Names are never resolved: start-up does no DNS.
struct RelayBindAddress: Sendable, Equatable {
    /// The address as written in URLs and messages (IPv6 without brackets).
    let host: String
    let port: Int
    let isIPv6: Bool
    /// The bytes of a `sockaddr_in` or `sockaddr_in6`.
    let storage: [UInt8]

    init?(host rawHost: String, port: Int) {
        guard (0...65535).contains(port) else { return nil }
        var host = rawHost
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.lowercased() == "localhost" { host = "127.0.0.1" }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr = v4
            storage = withUnsafeBytes(of: &address) { Array($0) }
            isIPv6 = false
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            address.sin6_addr = v6
            storage = withUnsafeBytes(of: &address) { Array($0) }
            isIPv6 = true
        } else {
            return nil
        }
        self.host = host
        self.port = port
    }

    /// The same address with another port (the one actually bound, for port 0).
    func with(port: Int) -> RelayBindAddress {
        RelayBindAddress(host: host, port: port) ?? self
    }

    /// `http://HOST:PORT`, IPv6 in brackets.
    var url: String { "http://" + (isIPv6 ? "[\(host)]" : host) + ":\(port)" }
}
