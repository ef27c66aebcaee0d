import CHapiLoopback
import PushSync

/// Why a ``LoopbackServer`` could not start.
public struct LoopbackServerError: Error, Sendable, CustomStringConvertible {
    public let message: String

    public init(message: String) {
        self.message = message
    }

    public var description: String { "LoopbackServer: \(message)" }
}

/// A real HTTP/2 + TLS server on 127.0.0.1 that stands in for the push relay, APNs and FCM in
/// tests and the demo.
///
/// It speaks HTTP/2 (nghttp2) over TLS 1.2+ (OpenSSL, ALPN `h2`, falling back to HTTP/1.1), or
/// cleartext h2c with prior knowledge / HTTP/1.1, with a throwaway CA created at start
/// (``caCertificatePath``). Every request is passed to the handler on the server's single event-loop
/// thread; the returned ``Response`` can also inject faults (``Action``).
///
/// The handler must not call ``stop()`` (it would wait for its own thread) and should return quickly:
/// use ``Response/delayMilliseconds`` instead of sleeping, as all connections share the thread.
public final class LoopbackServer: Sendable {
    public enum Transport: Sendable {
        case tls
        case cleartext
    }

    public typealias Handler = @Sendable (Request) -> Response

    public let transport: Transport
    /// The ephemeral port on 127.0.0.1.
    public let port: Int
    /// PEM file of the throwaway CA that signed the server certificate (IP:127.0.0.1, DNS:localhost);
    /// `nil` for cleartext. Deleted by ``stop()``.
    public let caCertificatePath: String?

    /// `https://127.0.0.1:PORT` (or `http://` for cleartext).
    public var baseURL: String { "\(scheme)://127.0.0.1:\(port)" }
    /// `https://localhost:PORT`: the certificate is valid for this name too.
    public var localhostBaseURL: String { "\(scheme)://localhost:\(port)" }

    private var scheme: String { transport == .tls ? "https" : "http" }

    private let box: HandlerBox
    private let state: Locked<State>

    /// Starts listening at once. Throws ``LoopbackServerError`` if the certificates, the socket or
    /// the thread cannot be set up.
    ///
    /// - Parameters:
    ///   - initialWindowSize: the HTTP/2 flow-control window the server announces for each
    ///     stream; when set, the connection window stays at the protocol's 65,535 bytes too
    ///     (default: 1 MiB per stream, 16 MiB per connection).
    ///   - http1Only: TLS only: ALPN offers `http/1.1` alone, like a server without HTTP/2.
    public init(
        transport: Transport = .tls, maxConcurrentStreams: UInt32 = 1000, silent: Bool = false,
        initialWindowSize: UInt32? = nil, http1Only: Bool = false, handler: @escaping Handler
    ) throws(LoopbackServerError) {
        var config = hapi_lb_config()
        config.transport = transport == .tls ? HAPI_LB_TLS : HAPI_LB_CLEARTEXT
        config.max_concurrent_streams = maxConcurrentStreams
        config.silent = silent ? 1 : 0
        config.initial_window_size = initialWindowSize ?? 0
        config.http1_only = http1Only ? 1 : 0

        let box = HandlerBox(handler)
        // The C side holds this reference until stop() releases it.
        let context = Unmanaged.passRetained(box).toOpaque()
        var errbuf = [CChar](repeating: 0, count: 512)
        let started = errbuf.withUnsafeMutableBufferPointer { buffer in
            hapi_lb_start(&config, loopbackTrampoline, context, buffer.baseAddress, buffer.count)
        }
        guard let started else {
            Unmanaged<HandlerBox>.fromOpaque(context).release()
            let message = String(decoding: errbuf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw LoopbackServerError(message: message.isEmpty ? "could not start" : message)
        }
        self.transport = transport
        self.box = box
        self.port = Int(hapi_lb_port(started))
        self.caCertificatePath = hapi_lb_ca_path(started).map { String(cString: $0) }
        self.state = Locked(State(server: ServerHandle(pointer: started), context: context))
    }

    deinit {
        stop()
    }

    /// Replaces the handler; requests dispatched from now on use the new one.
    public func setHandler(_ handler: @escaping Handler) {
        box.handler.withLock { $0 = HandlerBox.Stored(call: handler) }
    }

    /// TCP connections accepted so far.
    public var connectionsAccepted: Int { counters().accepted }
    /// Requests passed to the handler so far.
    public var requestsHandled: Int { counters().handled }
    /// Connections currently open (0 after ``stop()``).
    public var openConnections: Int { counters().open }

    /// Closes every connection, joins the server thread and deletes the CA file. Idempotent;
    /// also done by `deinit`. Never call it from the handler.
    public func stop() {
        let claimed = state.withLock { state -> ServerHandle? in
            guard !state.stopClaimed else { return nil }
            state.stopClaimed = true
            return state.server
        }
        guard let server = claimed else { return }
        // Halt first: the loop thread is joined, but the counters stay readable until freed.
        hapi_lb_halt(server.pointer)
        let context = state.withLock { state -> UnsafeMutableRawPointer? in
            state.final = Counters(server)
            state.server = nil
            defer { state.context = nil }
            return state.context
        }
        hapi_lb_stop(server.pointer)
        if let context {
            Unmanaged<HandlerBox>.fromOpaque(context).release()
        }
    }

    private func counters() -> Counters {
        state.withLock { state in state.server.map { Counters($0) } ?? state.final }
    }
}

/// The handler, shared with the C side through an `Unmanaged` context pointer.
private final class HandlerBox: Sendable {
    /// The closure sits inside a struct: a bare function value in a generic lock is reabstracted on
    /// every `withLock` access, and the write-back wraps it in one more thunk each request.
    struct Stored: Sendable { let call: LoopbackServer.Handler }
    let handler: Locked<Stored>

    init(_ handler: @escaping LoopbackServer.Handler) {
        self.handler = Locked(Stored(call: handler))
    }
}

/// The C server. Its counters are atomics and its lifetime is guarded by `State`, so the pointer
/// may cross threads.
private struct ServerHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

private struct Counters {
    var accepted = 0
    var handled = 0
    var open = 0

    init() {}

    init(_ server: ServerHandle) {
        accepted = Int(clamping: hapi_lb_connections_accepted(server.pointer))
        handled = Int(clamping: hapi_lb_requests_handled(server.pointer))
        open = Int(clamping: hapi_lb_open_connections(server.pointer))
    }
}

private struct State: @unchecked Sendable {  // the raw context pointer is only passed to release()
    var server: ServerHandle?
    var context: UnsafeMutableRawPointer?
    var stopClaimed = false
    var final = Counters()
}

/// Runs on the server thread for every complete request: converts it, asks the Swift handler,
/// and fills the C response before returning (the request memory is only valid until then).
private let loopbackTrampoline: hapi_lb_handler = { context, request, response in
    guard let context, let request, let response else { return }
    let box = Unmanaged<HandlerBox>.fromOpaque(context).takeUnretainedValue()
    let handler = box.handler.withLock { $0 }
    handler.call(LoopbackServer.Request(request.pointee)).fill(response)
}
