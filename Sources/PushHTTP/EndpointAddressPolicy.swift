#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which resolved addresses a request to a URL chosen by someone else may connect to (Web Push
/// endpoints: a browser, or anyone holding a hub token, picks them, and the hub POSTs there).
/// `publicOnly` refuses loopback, private (RFC 1918, CGNAT 100.64/10), link-local,
/// unique-local (fc00::/7), multicast, unspecified and other reserved ranges, in IPv4 and IPv6,
/// IPv4-mapped and NAT64-embedded IPv4 judged as the IPv4 address they carry. Enforced by the
/// HTTP client on the very address it connects to, so a name resolving differently between a
/// check and the connect (DNS rebinding) gains nothing.
package enum EndpointAddressPolicy: Sendable, Hashable {
    case any
    case publicOnly

    /// Why an address is refused, or nil when it may be used.
    package enum Refusal: String, Sendable, Hashable {
        case loopback, privateNetwork = "private", linkLocal = "link_local", uniqueLocal = "unique_local", multicast
        case unspecified, reserved
    }

    /// Classifies a `sockaddr_in` / `sockaddr_in6` (as bytes); nil = allowed under `publicOnly`.
    package static func refusal(sockaddr bytes: [UInt8]) -> Refusal? {
        guard bytes.count >= 2 else { return .reserved }
        let family = bytes.withUnsafeBytes { $0.load(as: sa_family_t.self) }
        if Int32(family) == AF_INET, bytes.count >= MemoryLayout<sockaddr_in>.size {
            return refusal(ipv4: Array(bytes[4..<8]))
        }
        if Int32(family) == AF_INET6, bytes.count >= MemoryLayout<sockaddr_in6>.size {
            return refusal(ipv6: Array(bytes[8..<24]))
        }
        return .reserved
    }

    /// Classifies a textual address (`127.0.0.1`, `::ffff:127.0.0.1`); nil = allowed.
    package static func refusal(address text: String) -> Refusal? {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return refusal(ipv4: withUnsafeBytes(of: &v4) { Array($0) }) }
        if inet_pton(AF_INET6, text, &v6) == 1 { return refusal(ipv6: withUnsafeBytes(of: &v6) { Array($0) }) }
        return .reserved
    }

    package static func refusal(ipv4 a: [UInt8]) -> Refusal? {
        guard a.count == 4 else { return .reserved }
        switch (a[0], a[1]) {
        case (0, _): return .unspecified  // 0.0.0.0/8 ("this network")
        case (127, _): return .loopback
        case (10, _), (172, 16...31), (192, 168): return .privateNetwork
        case (100, 64...127): return .privateNetwork  // carrier-grade NAT, RFC 6598
        case (169, 254): return .linkLocal
        case (224...239, _): return .multicast
        case (240...255, _): return .reserved  // including 255.255.255.255
        case (192, 0) where a[2] == 0 || a[2] == 2: return .reserved  // IETF protocol assignments, TEST-NET-1
        case (198, 18...19): return .reserved  // benchmarking
        case (198, 51) where a[2] == 100, (203, 0) where a[2] == 113: return .reserved  // TEST-NET-2, -3
        default: return nil
        }
    }

    package static func refusal(ipv6 a: [UInt8]) -> Refusal? {
        guard a.count == 16 else { return .reserved }
        let first10Zero = a[0..<10].allSatisfy { $0 == 0 }
        if first10Zero && a[10] == 0xFF && a[11] == 0xFF { return refusal(ipv4: Array(a[12..<16])) }  // ::ffff:a.b.c.d
        if a[0..<15].allSatisfy({ $0 == 0 }) {
            return a[15] == 1 ? .loopback : (a[15] == 0 ? .unspecified : .reserved)  // ::1, ::, IPv4-compatible
        }
        if a[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return refusal(ipv4: Array(a[12..<16])) }  // NAT64 64:ff9b::/96
        if a[0] == 0xFF { return .multicast }
        if a[0] == 0xFE && (a[1] & 0xC0) == 0x80 { return .linkLocal }  // fe80::/10
        if a[0] == 0xFE && (a[1] & 0xC0) == 0xC0 { return .uniqueLocal }  // fec0::/10, deprecated site-local
        if (a[0] & 0xFE) == 0xFC { return .uniqueLocal }  // fc00::/7
        if a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0D && a[3] == 0xB8 { return .reserved }  // documentation
        if a[0] == 0x20 && a[1] == 0x02 { return refusal(ipv4: Array(a[2..<6])) }  // 6to4 carries an IPv4 address
        if a[0] == 0 { return .reserved }  // ::/8 otherwise
        return nil
    }

    /// Whether this policy lets a connection go to `sockaddr`.
    package func allows(sockaddr bytes: [UInt8]) -> Bool {
        self == .any || Self.refusal(sockaddr: bytes) == nil
    }
}
