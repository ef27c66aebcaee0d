#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform

/// How one HTTP/2 connection gets its TCP socket: the name's addresses (asked of the resolver,
/// judged by the origin's address policy), raced Happy Eyeballs style, or a tunnel through the
/// origin's `http://` proxy. Kept apart from TLS and HTTP/2 because none of it outlives the
/// connect: the connection hands over a connected socket (or an error) and this layer is done.
/// Loop thread only; it reports progress to `H2Connection` rather than to the loop.
final class H2Connector {
    /// A connected socket, and the proxy tunnel that owns it (libcurl closes it) if any.
    struct Socket {
        let fd: Int32
        let tunnel: ProxyTunnel?
        /// The poller interest already registered for `fd` (0: not registered).
        let interest: UInt32
    }

    enum Progress {
        /// Still connecting (or waiting for an address's turn).
        case waiting
        case connected(Socket)
        case failed(HTTPClientError)
    }

    /// RFC 8305's recommended Connection Attempt Delay.
    static let attemptDelay: Duration = .milliseconds(250)

    /// The connection's id: the resolver's and the tunnel's answers and every attempt's
    /// readiness come back under it.
    let token: UInt64
    let origin: H2Origin
    unowned let loop: H2Loop

    private var addresses: [SocketAddress] = []
    private var nextAddress = 0
    private var lastConnectError: String = "no address tried"
    /// Sockets still connecting (Happy Eyeballs), and when the next address is due.
    private var attempts: [Int32] = []
    private var nextAttemptAt: ContinuousClock.Instant?

    init(token: UInt64, origin: H2Origin, loop: H2Loop) {
        self.token = token
        self.origin = origin
        self.loop = loop
    }

    // MARK: - Addresses and the tunnel

    /// Asks the proxy for a tunnel to the origin (libcurl, on a tunnel thread): the proxy
    /// resolves the origin's name, we never look it up. The answer arrives as `.tunnelled`.
    func openTunnel(through proxy: HTTPProxy, timeout: Duration) {
        let loopHandle = loop.handle
        let id = token
        loop.settings.tunnels.open(through: proxy, to: origin.key, timeout: timeout) { result in
            _ = loopHandle.enqueue(.tunnelled(connection: id, result))  // refused at shutdown: the tunnel is released
        }
    }

    /// The origin's addresses at once for a numeric host; nil when the name went to the
    /// resolver's threads (the answer arrives as `.resolved`).
    func lookUp() -> Result<[SocketAddress], HTTPClientError>? {
        let host = origin.key.host
        if origin.key.hostIsNumeric {
            return SocketAddress.resolve(host: host, port: origin.key.port, numericOnly: true)
        }
        let loopHandle = loop.handle
        let id = token
        loop.settings.resolver.resolve(host: host, port: origin.key.port) { result in
            _ = loopHandle.enqueue(.resolved(connection: id, result))
        }
        return nil
    }

    /// Keeps the resolved addresses the policy allows; the error when there is none to try.
    func adopt(_ result: Result<[SocketAddress], HTTPClientError>) -> HTTPClientError? {
        switch result {
        case .failure(let error):
            return error
        case .success(let list):
            // The policy judges the very addresses connected to, never a second resolution.
            addresses = list.filter { origin.addressPolicy.allows(sockaddr: $0.bytes) }
            guard !addresses.isEmpty else {
                return HTTPClientError(.addressNotAllowed, detail: "\(origin.key.authority) resolves only to refused addresses")
            }
            return nil
        }
    }

    /// The proxy's tunnel as the connected socket (it stays the socket's owner).
    func adopt(_ tunnel: ProxyTunnel) -> Socket {
        let fd = tunnel.socket
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return Socket(fd: fd, tunnel: tunnel, interest: 0)
    }

    // MARK: - Happy Eyeballs

    /// Happy Eyeballs (RFC 8305, its simple form): one attempt per address in the interleaved
    /// order, the next started when the previous has not connected within
    /// `attemptDelay` (or at once when it failed); the first to connect wins, the rest are
    /// closed. Every attempt's socket is registered under the connection's id.
    func startNextAttempt() -> Progress {
        while nextAddress < addresses.count {
            let address = addresses[nextAddress]
            nextAddress += 1
            let socketFD = Platform.makeStreamSocket(family: address.family)
            guard socketFD >= 0 else {
                lastConnectError = "socket: \(String(cString: strerror(errno)))"
                continue
            }
            var one: Int32 = 1
            _ = setsockopt(socketFD, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            _ = setsockopt(socketFD, SOL_SOCKET, SO_KEEPALIVE, &one, socklen_t(MemoryLayout<Int32>.size))
            let rc = address.bytes.withUnsafeBytes { raw in
                connect(socketFD, raw.baseAddress?.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
            }
            guard rc == 0 || errno == EINPROGRESS else {
                lastConnectError = String(cString: strerror(errno))
                Platform.close(socketFD)
                continue
            }
            guard loop.poller.set(socketFD, events: PlatformReadiness.writable, token: token, add: true) else {
                lastConnectError = "\(PlatformSelectorBackend.registrationCall): \(String(cString: strerror(errno)))"
                Platform.close(socketFD)
                continue
            }
            attempts.append(socketFD)
            nextAttemptAt = nextAddress < addresses.count ? loop.now + H2Connector.attemptDelay : nil
            return .waiting
        }
        nextAttemptAt = nil
        if attempts.isEmpty {
            return .failed(HTTPClientError(.connectionRefused, detail: "could not connect to \(origin.key.authority): \(lastConnectError)"))
        }
        return .waiting
    }

    /// The sweep's tick while connecting: the next address's turn may have come.
    func timerFired(now: ContinuousClock.Instant) -> Progress {
        guard let due = nextAttemptAt, now >= due else { return .waiting }
        return startNextAttempt()
    }

    /// Some attempt's socket is ready: keep the first that connected, drop those that failed.
    func attemptsReady() -> Progress {
        var pollSet = attempts.map { pollfd(fd: $0, events: Int16(POLLOUT), revents: 0) }
        guard poll(&pollSet, nfds_t(pollSet.count), 0) > 0 else { return .waiting }
        var winner: Int32?
        for entry in pollSet where entry.revents != 0 {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(entry.fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error == 0, winner == nil, entry.revents & Int16(POLLOUT) != 0 {
                winner = entry.fd
            } else if error != 0 || entry.revents & Int16(POLLERR | POLLHUP) != 0 {
                lastConnectError = String(cString: strerror(error != 0 ? error : ECONNREFUSED))
                closeAttempt(entry.fd)
            }
        }
        guard let winner else {
            // Every attempt so far failed: the next address now, not after the delay.
            if attempts.isEmpty { return startNextAttempt() }
            return .waiting
        }
        for other in attempts where other != winner { closeAttempt(other) }
        attempts = []
        nextAttemptAt = nil
        return .connected(Socket(fd: winner, tunnel: nil, interest: PlatformReadiness.writable))
    }

    private func closeAttempt(_ socketFD: Int32) {
        loop.poller.remove(socketFD)
        Platform.close(socketFD)
        attempts.removeAll { $0 == socketFD }
    }

    /// Closes the attempts still connecting. Idempotent.
    func close() {
        for attempt in attempts {
            loop.poller.remove(attempt)
            Platform.close(attempt)
        }
        attempts = []
    }
}
