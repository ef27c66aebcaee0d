public import PushLoopbackServer
import PushSync

/// A loopback HTTP/2 TLS server that records every request and answers through a replaceable
/// responder: the stand-in for the relay, APNs, FCM and Google's token endpoint in tests and
/// the demo.
public final class RecordingServer: Sendable {
    public typealias Responder = @Sendable (LoopbackServer.Request) -> LoopbackServer.Response

    private final class State: Sendable {
        /// Wrapped in a struct so the closure is not re-thunked on every lock access.
        struct Stored: Sendable { let respond: Responder }
        let requests = Locked<[LoopbackServer.Request]>([])
        let responder: Locked<Stored>
        init(_ responder: @escaping Responder) { self.responder = Locked(Stored(respond: responder)) }
    }

    public let server: LoopbackServer
    private let state: State

    public init(
        transport: LoopbackServer.Transport = .tls, maxConcurrentStreams: UInt32 = 1000,
        respond: @escaping Responder = { _ in .json(#"{"ok":true}"#) }
    ) throws {
        let state = State(respond)
        self.state = state
        self.server = try LoopbackServer(transport: transport, maxConcurrentStreams: maxConcurrentStreams) { request in
            state.requests.withLock { $0.append(request) }
            let responder = state.responder.withLock { $0 }
            return responder.respond(request)
        }
    }

    public var baseURL: String { server.baseURL }
    public var caFile: String? { server.caCertificatePath }

    /// Every request so far, in arrival order.
    public var requests: [LoopbackServer.Request] { state.requests.withLock { $0 } }

    public func clearRequests() { state.requests.withLock { $0.removeAll() } }

    /// Replaces how the server answers from now on.
    public func respond(_ responder: @escaping Responder) {
        state.responder.withLock { $0 = State.Stored(respond: responder) }
    }

    public func stop() { server.stop() }
}
