#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushSync

/// The HTTP/2 engine's face to other threads: a command queue under one lock and a wake-up (an eventfd, or a pipe)
/// that wakes the engine's thread. The thread owns everything else (`H2Loop`): sockets, TLS,
/// nghttp2 sessions, the per-origin connection pools and queues.
///
/// A batch of requests is one command: one lock and at most one wakeup, whatever its size.
final class H2EventLoop: Sendable {
    enum Command: Sendable {
        case submit([HTTPTransfer])
        case cancel(HTTPTransfer)
        case resolved(connection: UInt64, Result<[SocketAddress], HTTPClientError>)
        case tunnelled(connection: UInt64, Result<ProxyTunnel, HTTPClientError>)
    }

    struct Settings: Sendable {
        var connectTimeout: Duration
        var maximumResponseBodyBytes: Int
        var maximumConnectionsPerOrigin: Int
        var maximumConcurrentStreamsPerConnection: Int
        /// A connection that has received nothing for this long is sent a PING.
        var pingInterval: Duration
        /// A PING unanswered for this long means the connection is dead.
        var pingTimeout: Duration
        var tls: TLSClientContext
        /// Where host names are looked up (never on the loop thread).
        var resolver: HTTPResolver
        /// Where proxy tunnels are opened (never on the resolver's threads).
        var tunnels = ProxyTunnelOpener()
        /// Told once per origin found not to speak HTTP/2 (ALPN chose `http/1.1`), with its
        /// requests not yet started: the client sends them, and later ones, by another engine.
        /// This engine knows no other: the choice is the client's (`HTTPClient`).
        var originLacksHTTP2: @Sendable (HTTPOrigin, [HTTPTransfer]) -> Void
    }

    private enum Phase: Sendable {
        case running
        case shuttingDown
        case exited
    }

    private struct Shared: Sendable {
        var commands: [Command] = []
        var phase: Phase = .running
    }

    let settings: Settings
    let counters: HTTPCounters
    /// Written only under `shared`'s lock while running; closed by the thread after it has
    /// seen the phase change under that lock, so no write reaches a closed descriptor.
    /// The platform's selector (PushPlatform: epoll, or poll(2)) as created, with `wakeup`
    /// registered; the loop thread works on its own copy.
    let poller: PlatformSelectorBackend
    let wakeup: PlatformWakeupBackend
    private let shared = Locked(Shared())
    /// The loop's thread, set once it has started (before `start` returns the loop).
    private let thread = Locked<PushThread?>(nil)

    private init(settings: Settings, counters: HTTPCounters, wakeup: PlatformWakeupBackend, poller: PlatformSelectorBackend) {
        self.settings = settings
        self.counters = counters
        self.wakeup = wakeup
        self.poller = poller
    }

    static func start(settings: Settings, counters: HTTPCounters) throws(HTTPClientError) -> H2EventLoop {
        let wakeup: PlatformWakeupBackend
        do {
            wakeup = try PlatformWakeupBackend.make()
        } catch {
            throw HTTPClientError(.other, detail: error.description)
        }
        let poller: PlatformSelectorBackend
        do {
            poller = try PlatformSelectorBackend.make(wake: wakeup)
        } catch {
            wakeup.close()
            throw HTTPClientError(.other, detail: error.description)
        }
        let handle = H2EventLoop(settings: settings, counters: counters, wakeup: wakeup, poller: poller)
        let thread: PushThread
        do {
            thread = try PushThread.start(name: "hapi-push-h2") {
                // Writes to a peer that has gone must fail with EPIPE, not kill the host: block
                // SIGPIPE on this thread only (OpenSSL writes with write(2), not MSG_NOSIGNAL).
                var signals = sigset_t()
                sigemptyset(&signals)
                sigaddset(&signals, SIGPIPE)
                pthread_sigmask(SIG_BLOCK, &signals, nil)
                H2Loop(handle: handle).run()
                handle.exited()
            }
        } catch {
            wakeup.close()
            poller.close()
            throw HTTPClientError(.other, detail: "cannot start the HTTP/2 thread (\(error.call): \(error.code))")
        }
        handle.thread.withLock { $0 = thread }
        return handle
    }

    // MARK: - Any thread

    /// Queues a command for the loop thread. False once shutdown has begun.
    func enqueue(_ command: Command) -> Bool {
        shared.withLock { shared in
            guard case .running = shared.phase else { return false }
            let wasEmpty = shared.commands.isEmpty
            shared.commands.append(command)
            // A non-empty queue means a wakeup is already pending.
            if wasEmpty { wake() }
            return true
        }
    }

    private func wake() {
        wakeup.wake()
    }

    /// Starts shutting down without waiting. Idempotent.
    func beginShutdown() {
        shared.withLock { shared in
            guard case .running = shared.phase else { return }
            shared.phase = .shuttingDown
            wake()
        }
    }

    /// Shuts down and waits until the thread has failed what was pending, freed everything and
    /// been joined.
    func shutdown() async {
        beginShutdown()
        await thread.withLock({ $0 })?.joined()
    }

    // MARK: - Loop thread

    /// Swaps the queued commands into `commands`; true once shutdown has begun (the queue is
    /// then closed: nothing more arrives).
    func takeCommands(_ commands: inout [Command]) -> Bool {
        shared.withLock { shared in
            swap(&commands, &shared.commands)
            if case .running = shared.phase { return false }
            return true
        }
    }

    private func exited() {
        shared.withLock { $0.phase = .exited }
        wakeup.close()
        poller.close()
    }
}

/// The requests of one origin waiting for a stream, oldest first; one taken back (its stream
/// could not start) goes to the front.
typealias H2PendingQueue = PushFIFO<H2PendingEntry>

/// One request waiting for a stream of its origin.
struct H2PendingEntry {
    let transfer: HTTPTransfer
    /// Taken from the queue once already (running): not started a second time.
    var started: Bool
}

/// One origin's connections and queue, under one address policy: a request never rides a
/// connection opened under a looser policy than its own. Loop thread only.
final class H2Origin {
    struct Key: Hashable {
        let origin: HTTPOrigin
        let addressPolicy: EndpointAddressPolicy
    }

    let key: HTTPOrigin
    /// Which resolved addresses its connections may go to.
    let addressPolicy: EndpointAddressPolicy
    /// The `http://` proxy its connections tunnel through, nil for direct.
    let proxy: HTTPProxy?
    /// Its connections' states and the pool's rules; the connections themselves are the
    /// loop's, by id.
    var pool: H2PoolStateMachine
    var pending = H2PendingQueue()

    init(key: HTTPOrigin, addressPolicy: EndpointAddressPolicy, proxy: HTTPProxy?, pool: H2PoolStateMachine.Settings) {
        self.key = key
        self.addressPolicy = addressPolicy
        self.proxy = proxy
        self.pool = H2PoolStateMachine(settings: pool)
    }
}
