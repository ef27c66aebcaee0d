import PushSync

/// Opens the HTTP/2 engine's proxy tunnels off its event loop and off the resolver's threads:
/// libcurl's CONNECT blocks (`ProxyTunnel.open`), so two slow proxies on the resolver's two
/// threads would stall every name lookup. Its two threads start with the first tunnel, so a
/// client that never goes through an `http://` proxy never has them.
final class ProxyTunnelOpener: Sendable {
    static let threadCount = 2

    private let workers = Locked<BlockingWorkers<Void>?>(nil)

    /// Opens a tunnel through `proxy` to `origin` on a tunnel thread and hands it to `deliver`
    /// there.
    func open(
        through proxy: HTTPProxy, to origin: HTTPOrigin, timeout: Duration,
        deliver: @escaping @Sendable (Result<ProxyTunnel, HTTPClientError>) -> Void
    ) {
        let pool = workers.withLock { workers in
            if let workers { return workers }
            let started = BlockingWorkers<Void>(name: "hapi-push-proxy", count: Self.threadCount) { () }
            workers = started
            return started
        }
        pool.post { worker in
            guard worker != nil else {
                return deliver(.failure(HTTPClientError(.other, detail: "no thread could be started to reach the proxy")))
            }
            deliver(ProxyTunnel.open(through: proxy, to: origin, timeout: timeout))
        }
    }
}
