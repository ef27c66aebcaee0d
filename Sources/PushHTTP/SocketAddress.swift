import Glibc

/// A resolved address to connect to, as bytes of a `sockaddr_in`/`sockaddr_in6`.
struct SocketAddress: Sendable {
    let family: Int32
    let bytes: [UInt8]

    /// Resolves `host:port`. Blocking for a name (never call it on the loop thread then);
    /// immediate for a numeric address.
    static func resolve(host: String, port: Int, numericOnly: Bool) -> Result<[SocketAddress], HTTPClientError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
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

    /// Resolves a host name on a short-lived thread of its own (getaddrinfo blocks) and hands
    /// the result to `deliver` on that thread.
    static func resolveInBackground(
        host: String, port: Int, deliver: @escaping @Sendable (Result<[SocketAddress], HTTPClientError>) -> Void
    ) -> Bool {
        final class Job: Sendable {
            let host: String
            let port: Int
            let deliver: @Sendable (Result<[SocketAddress], HTTPClientError>) -> Void
            init(host: String, port: Int, deliver: @escaping @Sendable (Result<[SocketAddress], HTTPClientError>) -> Void) {
                self.host = host
                self.port = port
                self.deliver = deliver
            }
        }
        let context = Unmanaged.passRetained(Job(host: host, port: port, deliver: deliver)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                let job = Unmanaged<Job>.fromOpaque(context).takeRetainedValue()
                job.deliver(SocketAddress.resolve(host: job.host, port: job.port, numericOnly: false))
                return nil
            }, context)
        guard rc == 0 else {
            Unmanaged<Job>.fromOpaque(context).release()
            return false
        }
        pthread_detach(thread)
        return true
    }
}
