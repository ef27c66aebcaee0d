#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform

/// A resolved address to connect to, as bytes of a `sockaddr_in`/`sockaddr_in6`.
struct SocketAddress: Sendable {
    let family: Int32
    let bytes: [UInt8]

    /// Resolves `host:port`. Blocking for a name (only on `HTTPResolver`'s threads then);
    /// immediate for a numeric address.
    static func resolve(host: String, port: Int, numericOnly: Bool) -> Result<[SocketAddress], HTTPClientError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Platform.streamSocketType
        hints.ai_flags = AI_NUMERICSERV | (numericOnly ? AI_NUMERICHOST : AI_ADDRCONFIG)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let list else {
            let reason = gai_strerror(rc).map { String(cString: $0) } ?? "error \(rc)"
            return .failure(HTTPClientError(.dnsFailure, detail: "could not resolve host \(host): \(reason)"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let entry = cursor {
            if let address = entry.pointee.ai_addr, entry.pointee.ai_family == AF_INET || entry.pointee.ai_family == AF_INET6 {
                let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen)))
                addresses.append(SocketAddress(family: entry.pointee.ai_family, bytes: bytes))
            }
            cursor = entry.pointee.ai_next
        }
        guard !addresses.isEmpty else {
            return .failure(HTTPClientError(.dnsFailure, detail: "host \(host) has no IPv4 or IPv6 address"))
        }
        return .success(addresses)
    }

    /// The order to try addresses in (RFC 8305 §4): the resolver's first family first, then
    /// the two families alternating, each in the resolver's order.
    static func interleaved(_ addresses: [SocketAddress]) -> [SocketAddress] {
        guard let first = addresses.first?.family else { return addresses }
        let preferred = addresses.filter { $0.family == first }
        let other = addresses.filter { $0.family != first }
        var result: [SocketAddress] = []
        result.reserveCapacity(addresses.count)
        for index in 0..<max(preferred.count, other.count) {
            if index < preferred.count { result.append(preferred[index]) }
            if index < other.count { result.append(other[index]) }
        }
        return result
    }
}
