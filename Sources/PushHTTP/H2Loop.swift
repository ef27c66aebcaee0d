import CHapiNghttp2
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushSync
import Synchronization

/// The HTTP/2 engine's thread: the platform's selector (PushPlatform: epoll, or poll(2)) over every connection's socket and the wake-up;
/// per origin, a pool whose rules are a value (`H2PoolStateMachine`: stream limits, GOAWAY,
/// idle PING, connect backoff) and a queue of requests waiting for a stream. Everything here
/// runs on that one thread: the loop tells each pool what happened and does what it answers.
///
/// One iteration: wait for readiness (50 ms at most while anything is in flight), read and
/// feed nghttp2, take the queued commands, expire deadlines and probe idle connections, hand
/// waiting requests to free streams (opening a connection only when the open ones are full),
/// then write what every connection has to send.
final class H2Loop {
    let handle: H2EventLoop
    let settings: H2EventLoop.Settings
    let counters: HTTPCounters
    /// Readiness of every connection's socket and of the wake-up (token 0).
    var poller: PlatformSelectorBackend
    /// nghttp2's callback table and options, shared by every session of this loop (nil only
    /// if nghttp2 could not allocate them: every connection then fails with a clear error).
    let callbacks: OpaquePointer?
    let options: OpaquePointer?
    /// One read buffer for all connections: they are read one after another.
    let readBuffer: UnsafeMutableRawBufferPointer
    /// The time at the start of this iteration.
    var now: ContinuousClock.Instant

    private var origins: [H2Origin.Key: H2Origin] = [:]
    private var connections: [UInt64: H2Connection] = [:]
    /// Requests on a stream, for cancellation.
    private var active: [ObjectIdentifier: (H2Connection, H2Exchange)] = [:]
    private var nextConnectionID: UInt64 = 1

    /// Our per-stream receive window, and the connection's (responses here are small; large
    /// windows mean a server never waits on us).
    static let streamWindow: UInt32 = 1 << 22
    static let connectionWindow: UInt32 = 1 << 24
    /// Response header bytes accepted per stream.
    static let maximumHeaderBytes = 256 * 1024
    /// What one flush gathers from nghttp2 before writing.
    static let writeChunk = 64 * 1024
    /// Received bytes fed to nghttp2 at once before ended streams are refilled.
    static let receiveSlice = 2048
    /// The deadline sweep's period while anything is in flight.
    static let sweepInterval: Duration = .milliseconds(50)

    init(handle: H2EventLoop) {
        self.handle = handle
        self.settings = handle.settings
        self.counters = handle.counters
        self.poller = handle.poller
        self.now = .now
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        var options: OpaquePointer?
        nghttp2_option_new(&options)
        self.callbacks = callbacks
        self.options = options
        if let callbacks { H2Callbacks.install(on: callbacks) }
        if let options {
            // Until the server's SETTINGS arrive, assume the RFC's recommended minimum.
            nghttp2_option_set_peer_max_concurrent_streams(options, 100)
            // We give the window back as soon as data arrives; nothing to tune.
            nghttp2_option_set_no_closed_streams(options, 1)
        }
        readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    }

    func run() {
        var tokens = [UInt64](repeating: 0, count: 256)
        var readiness = [UInt32](repeating: 0, count: 256)
        var commands: [H2EventLoop.Command] = []
        var lastSweep = now
        while true {
            let timeout = hasWorkInFlight ? Int32(50) : idleWaitMilliseconds
            let ready = poller.wait(tokens: &tokens, readiness: &readiness, timeout: timeout)
            now = .now
            if ready > 0 {
                for index in 0..<ready {
                    if tokens[index] == 0 {
                        handle.wakeup.drain()
                    } else if let connection = connections[tokens[index]] {
                        connection.handle(events: readiness[index])
                    }
                }
            }
            let stopping = handle.takeCommands(&commands)
            if stopping { break }
            for command in commands { process(command) }
            commands.removeAll(keepingCapacity: true)
            if now - lastSweep >= Self.sweepInterval {
                lastSweep = now
                sweep()
            }
            for origin in origins.values where !origin.pending.isEmpty { schedule(origin) }
            for connection in connections.values where connection.needsFlush { connection.flush() }
        }
        // Commands that raced the shutdown: their transfers fail with `.shutdown` too.
        _ = handle.takeCommands(&commands)
        for command in commands {
            if case .submit(let transfers) = command { for transfer in transfers { transfer.abort(with: .shutdown) } }
        }
        teardown()
    }

    private var hasWorkInFlight: Bool {
        !active.isEmpty || origins.values.contains { !$0.pending.isEmpty || $0.pool.isEstablishing }
    }

    private var poolSettings: H2PoolStateMachine.Settings {
        H2PoolStateMachine.Settings(
            maximumConnections: settings.maximumConnectionsPerOrigin,
            maximumStreamsPerConnection: settings.maximumConcurrentStreamsPerConnection,
            pingInterval: settings.pingInterval, pingTimeout: settings.pingTimeout)
    }

    private var idleWaitMilliseconds: Int32 {
        let half = settings.pingInterval / 2
        return half < .seconds(1) ? Int32(clamping: half.wholeMilliseconds) : 1000
    }

    // MARK: - Commands

    private func process(_ command: H2EventLoop.Command) {
        switch command {
        case .submit(let transfers):
            for transfer in transfers {
                let key = H2Origin.Key(origin: transfer.request.origin, addressPolicy: transfer.request.addressPolicy)
                let origin: H2Origin
                if let existing = origins[key] {
                    origin = existing
                } else {
                    origin = H2Origin(key: key.origin, addressPolicy: key.addressPolicy, proxy: transfer.proxy, pool: poolSettings)
                    origins[key] = origin
                }
                origin.pending.append(.init(transfer: transfer, started: false))
            }
        case .cancel(let transfer):
            if let (connection, exchange) = active.removeValue(forKey: ObjectIdentifier(transfer)) {
                exchange.finished = true
                connection.reset(exchange)
            }
            // Queued or running, its slot is filled now; a queued entry is dropped when reached.
            transfer.abort(with: .cancelled)
        case .resolved(let id, let result):
            connections[id]?.resolved(result)
        case .tunnelled(let id, let result):
            // A tunnel for a connection already gone is released here (its socket closed).
            connections[id]?.tunnelled(result)
        }
    }

    // MARK: - Scheduling

    /// Hands waiting requests of `origin` to free streams and, if `mayOpen`, opens a connection
    /// when requests are still waiting and the pool says so. True if a request was started.
    @discardableResult
    private func schedule(_ origin: H2Origin, mayOpen: Bool = true) -> Bool {
        var started = false
        while !origin.pending.isEmpty {
            guard let id = origin.pool.connectionWithFreeStream else { break }
            guard let connection = connections[id] else {
                origin.pool.connectionClosed(id, now: now)  // cannot happen: the pool and the table move together
                continue
            }
            guard let entry = origin.pending.popFirst() else { break }
            if entry.started {
                guard entry.transfer.isRunning else { continue }
            } else {
                guard entry.transfer.willStart() else { continue }
            }
            if entry.transfer.remainingTime <= .zero {
                entry.transfer.complete(.failure(HTTPClientError(.timeout, detail: "the request's timeout was spent before it got a stream")))
                continue
            }
            let exchange = H2Exchange(transfer: entry.transfer)
            if connection.submit(exchange) {
                started = true
                active[ObjectIdentifier(entry.transfer)] = (connection, exchange)
                counters.liveExchanges.add(1, ordering: .relaxed)
                counters.requestsSent.add(1, ordering: .relaxed)
            } else {
                // The connection cannot start streams any more (it is now draining): try the next.
                origin.pending.prepend(.init(transfer: entry.transfer, started: true))
            }
        }
        if mayOpen, !origin.pending.isEmpty, origin.pool.shouldOpenConnection(now: now) {
            openConnection(to: origin)
        }
        return started
    }

    /// Hands waiting requests of `origin` to the streams that have just ended, in the middle of
    /// reading (`H2Connection`'s sliced receive). True if any was started. Opens no connection:
    /// the rest of the read may free more streams, and the end of the iteration decides.
    func refill(_ origin: H2Origin) -> Bool {
        !origin.pending.isEmpty && schedule(origin, mayOpen: false)
    }

    private func openConnection(to origin: H2Origin) {
        let connection = H2Connection(id: nextConnectionID, origin: origin, loop: self, now: now)
        nextConnectionID += 1
        connections[connection.id] = connection
        origin.pool.connectionStarted(connection.id, now: now)
        connection.start()
    }

    // MARK: - Connection events

    func connectionOpened(_ connection: H2Connection) {
        counters.openH2Connections.add(1, ordering: .relaxed)
        connection.origin.pool.connectionOpened(connection.id, now: now)
    }

    /// A connection failed before it was open. If it was the origin's only hope, everything
    /// waiting for the origin fails with the same error (and the pool backs off).
    func connectionFailed(_ connection: H2Connection, _ error: HTTPClientError) {
        let origin = connection.origin
        connections[connection.id] = nil
        connection.close()
        guard origin.pool.connectFailed(connection.id, error, now: now) == .failWaiting else { return }
        for entry in origin.pending.takeAll() { entry.transfer.abort(with: error) }
    }

    /// An open connection broke. Requests it had sent may have been processed: they fail
    /// with `error`; requests it never sent fail `.streamRefused` (safe to send again).
    func connectionLost(_ connection: H2Connection, _ error: HTTPClientError) {
        guard connection.state == .open else {
            connectionFailed(connection, error)
            return
        }
        counters.openH2Connections.subtract(1, ordering: .relaxed)
        let origin = connection.origin
        let exchanges = connection.streams.values.sorted { $0.streamID < $1.streamID }
        connections[connection.id] = nil
        origin.pool.connectionClosed(connection.id, error: error, now: now)
        connection.close()
        for exchange in exchanges {
            counters.liveExchanges.subtract(1, ordering: .relaxed)
            active[ObjectIdentifier(exchange.transfer)] = nil
            guard !exchange.finished else { continue }
            let result: Result<HTTPResponse, HTTPClientError>
            if exchange.failure == nil, exchange.status != 0, exchange.endStreamReceived {
                result = exchange.result(errorCode: 0)
            } else if !exchange.requestSent {
                result = .failure(HTTPClientError(.streamRefused, detail: "the connection closed before the request was sent"))
            } else {
                result = .failure(exchange.failure ?? error)
            }
            exchange.transfer.complete(result)
        }
    }

    /// Both sides are done (after GOAWAY, or draining with no streams left): close quietly.
    func connectionFinished(_ connection: H2Connection) {
        connectionLost(connection, HTTPClientError(.connectionLost, detail: "the connection closed"))
    }

    /// ALPN chose `http/1.1` (or nothing): the origin's requests not yet started go back to
    /// the client, which sends them (and later ones) by another engine.
    func originLacksHTTP2(_ connection: H2Connection) {
        let origin = connection.origin
        connections[connection.id] = nil
        origin.pool.connectionClosed(connection.id, now: now)
        connection.close()
        var handedBack: [HTTPTransfer] = []
        for entry in origin.pending.takeAll() {
            if !entry.started {
                handedBack.append(entry.transfer)
            } else {
                // Taken from the queue once but never sent (its stream could not start): safe to send again.
                entry.transfer.abort(with: HTTPClientError(.streamRefused, detail: "the server stopped offering HTTP/2 before the request was sent"))
            }
        }
        origins[H2Origin.Key(origin: origin.key, addressPolicy: origin.addressPolicy)] = nil
        settings.originLacksHTTP2(origin.key, handedBack)
    }

    // MARK: - nghttp2 callbacks (inside mem_recv / mem_send)

    func frameReceived(_ frame: nghttp2_frame, on connection: H2Connection) {
        let type = frame.hd.type
        let flags = frame.hd.flags
        switch type {
        case UInt8(NGHTTP2_SETTINGS.rawValue) where flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
            let announced = nghttp2_session_get_remote_settings(connection.session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
            connection.origin.pool.settingsReceived(connection.id, maximumConcurrentStreams: announced)
        case UInt8(NGHTTP2_GOAWAY.rawValue):
            // Streams above last-stream-id are closed by nghttp2 as REFUSED_STREAM (reported
            // `.streamRefused`: the provider layer sends them again); the others finish here.
            connection.origin.pool.stopNewStreams(connection.id)
        case UInt8(NGHTTP2_PING.rawValue) where flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0:
            connection.origin.pool.pingAnswered(connection.id)
        case UInt8(NGHTTP2_HEADERS.rawValue), UInt8(NGHTTP2_DATA.rawValue):
            if flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                H2Callbacks.exchange(connection.session, frame.hd.stream_id)?.endStreamReceived = true
            }
        default:
            break
        }
    }

    func headerReceived(
        _ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, for exchange: H2Exchange, on connection: H2Connection
    ) {
        guard exchange.failure == nil else { return }
        exchange.headerBytes += name.count + value.count + 32
        guard exchange.headerBytes <= Self.maximumHeaderBytes else {
            fail(exchange, on: connection, HTTPClientError(.responseTooLarge, detail: "the response headers exceed 256 KiB"))
            return
        }
        if name.elementsEqual(":status".utf8) {
            if (100..<200).contains(exchange.status) { exchange.headers = HTTPHeaders() }  // a final answer follows a 1xx
            exchange.status = Self.decimal(value) ?? 0
            return
        }
        guard name.first != UInt8(ascii: ":") else { return }
        let nameText = String(decoding: name, as: UTF8.self)
        let valueText = String(decoding: value, as: UTF8.self)
        if nameText == "content-length", exchange.transfer.request.method != .head, let length = Self.decimal(value),
            length > settings.maximumResponseBodyBytes
        {
            fail(exchange, on: connection, HTTPClientError(.responseTooLarge, detail: "the announced body exceeds the maximum"))
            return
        }
        exchange.headers.add(name: nameText, value: valueText)
    }

    func dataReceived(_ data: UnsafeBufferPointer<UInt8>, for exchange: H2Exchange, on connection: H2Connection) {
        guard exchange.failure == nil, !exchange.finished else { return }
        guard data.count <= settings.maximumResponseBodyBytes - exchange.responseBody.count else {
            fail(exchange, on: connection, HTTPClientError(.responseTooLarge, detail: "the response body exceeds the maximum"))
            return
        }
        exchange.responseBody.append(contentsOf: data)
    }

    func streamClosed(_ streamID: Int32, errorCode: UInt32, on connection: H2Connection) {
        guard let exchange = connection.streams.removeValue(forKey: streamID) else { return }
        connection.streamsEnded &+= 1
        connection.origin.pool.streamEnded(connection.id)
        counters.liveExchanges.subtract(1, ordering: .relaxed)
        guard !exchange.finished else { return }
        active[ObjectIdentifier(exchange.transfer)] = nil
        exchange.transfer.complete(exchange.result(errorCode: errorCode))
    }

    /// Resets the stream; its result (`error`) is delivered when nghttp2 closes it.
    private func fail(_ exchange: H2Exchange, on connection: H2Connection, _ error: HTTPClientError) {
        exchange.failure = error
        connection.reset(exchange)
    }

    private static func decimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    // MARK: - Deadlines and liveness

    private func sweep() {
        for origin in origins.values {
            if !origin.pending.isEmpty {
                let now = self.now
                for entry in origin.pending.removeAll(where: { $0.transfer.deadline <= now }) {
                    entry.transfer.abort(with: origin.pool.waitingTimeoutError)
                }
            }
            for timer in origin.pool.tick(now: now) {
                switch timer {
                case .sendPing(let id):
                    connections[id]?.sendPing()
                case .pingUnanswered(let id):
                    if let connection = connections[id] {
                        connectionLost(connection, HTTPClientError(.connectionLost, detail: "the connection did not answer a PING"))
                    }
                }
            }
        }
        for connection in connections.values {
            switch connection.state {
            case .resolving:
                // The lookup's deadline is the connection's: a resolver that does not answer
                // in time is a DNS failure (the late answer is dropped).
                if now >= connection.connectDeadline {
                    connectionFailed(
                        connection,
                        HTTPClientError(
                            .dnsFailure, detail: "looking up \(connection.origin.key.host) did not finish within the connect timeout"))
                }
            case .tunnelling, .connecting, .handshaking:
                if now >= connection.connectDeadline {
                    connectionFailed(
                        connection,
                        HTTPClientError(.timeout, detail: "connecting to \(connection.origin.key.authority) timed out"))
                } else {
                    connection.connectTimerFired(now: now)
                }
            case .open:
                for exchange in connection.streams.values where !exchange.finished && exchange.transfer.deadline <= now {
                    exchange.finished = true
                    active[ObjectIdentifier(exchange.transfer)] = nil
                    connection.reset(exchange)
                    exchange.transfer.complete(.failure(HTTPClientError(.timeout, detail: "the request's timeout passed")))
                }
            case .closed:
                break
            }
        }
    }

    // MARK: - Shutdown

    private func teardown() {
        for connection in Array(connections.values) {
            let wasOpen = connection.state == .open
            for exchange in connection.streams.values where !exchange.finished {
                counters.liveExchanges.subtract(1, ordering: .relaxed)
                exchange.transfer.abort(with: .shutdown)
            }
            if wasOpen {
                counters.openH2Connections.subtract(1, ordering: .relaxed)
                connection.sayGoodbye()
            }
            connection.close()
        }
        connections = [:]
        for origin in origins.values {
            for entry in origin.pending.takeAll() { entry.transfer.abort(with: .shutdown) }
        }
        origins = [:]
        active = [:]
        if let callbacks { nghttp2_session_callbacks_del(callbacks) }
        if let options { nghttp2_option_del(options) }
        readBuffer.deallocate()
    }
}

extension Duration {
    /// Whole milliseconds, rounded down, never negative.
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
