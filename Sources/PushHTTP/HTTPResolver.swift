import PushSync
import Synchronization

/// Host-name lookups for the HTTP/2 engine, off its event loop and without a thread per lookup:
/// `getaddrinfo` blocks, so lookups run on a small fixed pool of dedicated threads
/// (`BlockingWorkers`), and the answer comes back to the loop as a command. The loop bounds
/// how long it waits (the connection's connect deadline); a lookup still running then keeps
/// its worker until the system resolver gives up, and its late answer is dropped.
///
/// Nothing is cached: a name that did not resolve is looked up again by the next connection
/// (the next dispatch), and DNS changes are seen at once.
final class HTTPResolver: Sendable {
    /// Answers a name without DNS, for tests: numeric addresses in the order to try them, an
    /// empty list for "does not resolve", nil to ask the system resolver.
    typealias Override = @Sendable (_ host: String) -> [String]?

    /// Two threads: one slow lookup (a dead DNS server) does not hold up every other origin,
    /// and a burst of origins is resolved in parallel without a thread each.
    static let threadCount = 2

    private let workers: BlockingWorkers<Void>
    private let override: Override?
    /// Names handed to `getaddrinfo` (or to the override) so far.
    let lookups = Atomic<Int>(0)

    init(override: Override?) {
        self.override = override
        workers = BlockingWorkers(name: "hapi-push-dns", count: Self.threadCount) { () }
    }

    /// Resolves `host:port` on a resolver thread and hands the addresses, IPv6 and IPv4
    /// interleaved (RFC 8305 §4), to `deliver` on that thread.
    func resolve(host: String, port: Int, deliver: @escaping @Sendable (Result<[SocketAddress], HTTPClientError>) -> Void) {
        workers.post { [self] worker in
            guard worker != nil else {
                return deliver(.failure(HTTPClientError(.dnsFailure, detail: "no resolver thread could be started for \(host)")))
            }
            lookups.add(1, ordering: .relaxed)
            let result: Result<[SocketAddress], HTTPClientError>
            if let answer = override?(host) {
                result = Self.numeric(answer, host: host, port: port)
            } else {
                result = SocketAddress.resolve(host: host, port: port, numericOnly: false)
            }
            deliver(result.map(SocketAddress.interleaved))
        }
    }

    /// The override's answer as addresses, in its order.
    private static func numeric(_ answer: [String], host: String, port: Int) -> Result<[SocketAddress], HTTPClientError> {
        var addresses: [SocketAddress] = []
        for text in answer {
            if case .success(let list) = SocketAddress.resolve(host: text, port: port, numericOnly: true) { addresses += list }
        }
        guard !addresses.isEmpty else {
            return .failure(HTTPClientError(.dnsFailure, detail: "could not resolve host \(host): Name or service not known"))
        }
        return .success(addresses)
    }
}
