import CHapiMicrohttpd
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushSync

/// libmicrohttpd behind a small Swift face: plain HTTP/1.1, its own polling threads (one epoll
/// set each), keep-alive, a connection limit, an inactivity timeout and a per-connection memory
/// cap. libmicrohttpd parses HTTP; this type only routes its callbacks.
///
/// A request is decided in two steps: when its head is in (`onHead`: answer now, or read the
/// body) and when its body is in (`onRequest`: answer now, or later). An answer given later
/// never blocks a libmicrohttpd thread: the connection is suspended, the work runs as a Swift
/// task, and the connection is resumed when it has answered.
final class MicroHTTPDaemon: Sendable {
    struct Settings: Sendable {
        var address: RelayBindAddress
        /// Polling threads; 1 runs one thread without a pool.
        var threads: Int
        var connectionLimit: Int
        /// Connections at once from one peer address; 0 for no limit. With deadlines, a new
        /// connection past the limit closes the address's oldest incomplete one instead of
        /// being refused (`RelayConnectionGuard`).
        var connectionsPerAddress: Int = 0
        /// Request line and headers within this many seconds of the request's first byte, the
        /// body within this many after the headers; 0 for no deadline (the inactivity timeout
        /// only). With deadlines, idle connections are also closed, oldest first, to keep
        /// room for fresh ones when the connection limit is near.
        var requestDeadlineSeconds: Int = 0
        /// Seconds a connection may be idle (or trickle nothing) before it is closed.
        var connectionTimeoutSeconds: Int
        /// libmicrohttpd's memory pool per connection: request line, headers and read buffer.
        var memoryLimitBytes: Int
        /// A body that grows beyond this (chunked: a declared `Content-Length` is refused by
        /// `onHead`) is read on and thrown away, and the request reaches `onRequest` with
        /// `bodyTooLarge` set: libmicrohttpd 0.9.75 cannot answer in the middle of an upload.
        var maximumBodyBytes: Int
        /// How much of a too-large body is read and thrown away before the connection is closed
        /// instead of answered.
        var maximumDiscardedBytes: Int = 1 << 20
        /// Whether `onRequest` may answer later (suspend/resume).
        var allowsLaterAnswers: Bool
    }

    /// The request line and headers.
    struct Head: Sendable {
        var method: String
        /// The path without the query string.
        var path: String
        /// The declared `Content-Length`, nil when absent (e.g. chunked); saturates at `UInt64.max`.
        var contentLength: UInt64?
    }

    /// A whole request.
    struct Request: Sendable {
        var head: Head
        var body: [UInt8]
        /// The body grew past `maximumBodyBytes` (`body` is empty then).
        var bodyTooLarge = false
        /// The peer's IP address as text ("" when unknown).
        var clientAddress: String
        /// The first `X-Forwarded-For` header, at most 256 bytes of it.
        var forwardedFor: String?
    }

    enum HeadDecision: Sendable {
        case answer(RelayHTTPAnswer)
        case readBody
    }

    enum RequestDecision: Sendable {
        case answer(RelayHTTPAnswer)
        /// Suspend the connection, run this as a task, answer with its result.
        case later(@Sendable () async -> RelayHTTPAnswer)
    }

    let address: RelayBindAddress
    /// Deadlines and room for fresh connections, when `requestDeadlineSeconds` is set.
    let connectionGuard: RelayConnectionGuard?
    private let core: DaemonCore
    private let daemon: DaemonHandle
    private let lifecycle = Locked(Lifecycle())

    private struct Lifecycle {
        var quiesced = false
        var stopped = false
    }

    /// Binds and starts the threads.
    ///
    /// - Throws: a message naming the address when it cannot listen.
    init(
        settings: Settings, onHead: @escaping @Sendable (Head) -> HeadDecision,
        onRequest: @escaping @Sendable (Request) -> RequestDecision
    ) throws(RelayListenError) {
        var connectionGuard: RelayConnectionGuard?
        if settings.requestDeadlineSeconds > 0 {
            let deadline = Int64(settings.requestDeadlineSeconds) * 1000
            connectionGuard = RelayConnectionGuard(
                settings: .init(
                    connectionLimit: settings.connectionLimit, headDeadlineMilliseconds: deadline, bodyDeadlineMilliseconds: deadline,
                    connectionsPerAddress: max(0, settings.connectionsPerAddress)))
        }
        do {
            try connectionGuard?.start()
        } catch {
            throw RelayListenError(message: "cannot listen on \(settings.address.url): \(error)")
        }
        let core = DaemonCore(settings: settings, connectionGuard: connectionGuard, onHead: onHead, onRequest: onRequest)
        let context = Unmanaged.passRetained(core).toOpaque()
        errno = 0
        let started: OpaquePointer? = settings.address.storage.withUnsafeBytes { raw in
            var config = hapi_mhd_config()
            config.address = raw.baseAddress?.assumingMemoryBound(to: sockaddr.self)
            config.ipv6 = settings.address.isIPv6
            config.allow_suspend = settings.allowsLaterAnswers
            config.use_poll = PlatformSelectorBackend.waitsWithPoll
            config.threads = UInt32(clamping: settings.threads)
            config.connection_limit = UInt32(clamping: settings.connectionLimit)
            config.connection_timeout = UInt32(clamping: settings.connectionTimeoutSeconds)
            config.memory_limit = max(PushRelayConfiguration.Server.minimumConnectionMemoryBytes, settings.memoryLimitBytes)
            // With the guard, the per-address limit is its own (it makes room rather than refuse).
            config.per_ip_limit = connectionGuard != nil ? 0 : UInt32(clamping: max(0, settings.connectionsPerAddress))
            if connectionGuard != nil {
                config.notify_connection = notifyTrampoline
                config.notify_connection_cls = context
            }
            return hapi_mhd_start(&config, accessTrampoline, context, completedTrampoline, context)
        }
        guard let started else {
            let reason = errno != 0 ? String(cString: strerror(errno)) : "libmicrohttpd refused to start"
            Unmanaged<DaemonCore>.fromOpaque(context).release()
            connectionGuard?.stop()
            throw RelayListenError(message: "cannot listen on \(settings.address.url): \(reason)")
        }
        self.core = core
        self.connectionGuard = connectionGuard
        self.daemon = DaemonHandle(pointer: started, context: context)
        self.address = settings.address.with(port: Int(hapi_mhd_bound_port(started)))
        self.waitsWithPoll = hapi_mhd_uses_poll(started)
    }

    /// Whether libmicrohttpd waits with poll(2) (off Linux, and the portable build) rather than
    /// the system's own queue: the platform layer's choice, as the daemon reports it.
    let waitsWithPoll: Bool

    deinit {
        // A daemon released without stop(): stop it here (joins its threads).
        stopNow()
    }

    /// Requests read or being answered (drops to 0 when every accepted request has finished).
    var openRequests: Int { core.shared.withLock { $0.openRequests } }

    /// Stops accepting connections; connections already open are still served. Idempotent.
    func quiesce() {
        let first = lifecycle.withLock { state -> Bool in
            guard !state.quiesced, !state.stopped else { return false }
            state.quiesced = true
            return true
        }
        guard first else { return }
        let listener = MHD_quiesce_daemon(daemon.pointer)
        if listener >= 0 { close(listener) }
    }

    /// Answers every suspended request with `answer` now, and any request that would be
    /// suspended from now on too. Used when the grace period of a stop runs out.
    func answerSuspended(with answer: RelayHTTPAnswer) {
        let waiting = core.shared.withLock { shared -> [RequestContext] in
            shared.refusingLaterAnswers = answer
            return Array(shared.suspended.values)
        }
        for context in waiting { core.complete(context, with: answer) }
    }

    /// Closes every connection and joins the threads, on a thread of its own (it blocks) while
    /// the calling task suspends. Idempotent.
    ///
    /// - Throws: `PushThreadError` when no thread can be had for it: the daemon then keeps
    ///   running until it is released (its `deinit` stops it).
    func stop() async throws(PushThreadError) {
        try await PushThread.run(name: "hapi-relay-stop") { [self] in stopNow() }
    }

    private func stopNow() {
        let first = lifecycle.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.stopped = true
            return true
        }
        guard first else { return }
        // libmicrohttpd aborts the process if stopped with a connection still suspended: answer
        // them all, and wait until every resume (ours and those of tasks finishing right now)
        // has returned. A context leaves `suspended` only after its resume.
        answerSuspended(with: .upstream)
        while core.shared.withLock({ !$0.suspended.isEmpty }) { usleep(1000) }
        MHD_stop_daemon(daemon.pointer)
        connectionGuard?.stop()
        Unmanaged<DaemonCore>.fromOpaque(daemon.context).release()
    }
}

/// Why a listener could not start.
struct RelayListenError: Error, Sendable {
    let message: String
}

/// The daemon pointer and the retained core it calls back into. Stopped once, under `Lifecycle`.
private struct DaemonHandle: @unchecked Sendable {
    let pointer: OpaquePointer
    let context: UnsafeMutableRawPointer
}

/// One request between its head and its end, owned by libmicrohttpd's per-request pointer.
final class RequestContext: @unchecked Sendable {
    // @unchecked: `body` is touched only on the connection's libmicrohttpd thread; `phase` is
    // locked; `connection` is only used while the connection is suspended (it cannot be freed
    // then) or on its own thread.
    enum Phase {
        case receiving
        case suspended
        case answered(RelayHTTPAnswer)
        case finished
    }

    let connection: OpaquePointer
    let head: MicroHTTPDaemon.Head
    var body: [UInt8] = []
    /// Bytes past the cap, read and thrown away.
    var discarded = 0
    let phase = Locked(Phase.receiving)

    init(connection: OpaquePointer, head: MicroHTTPDaemon.Head) {
        self.connection = connection
        self.head = head
    }
}

/// What the C callbacks reach through their context pointer.
private final class DaemonCore: Sendable {
    struct Shared {
        var suspended: [ObjectIdentifier: RequestContext] = [:]
        var openRequests = 0
        /// Set when stopping: later answers are replaced by this one at once.
        var refusingLaterAnswers: RelayHTTPAnswer?
    }

    let settings: MicroHTTPDaemon.Settings
    let connectionGuard: RelayConnectionGuard?
    let onHead: @Sendable (MicroHTTPDaemon.Head) -> MicroHTTPDaemon.HeadDecision
    let onRequest: @Sendable (MicroHTTPDaemon.Request) -> MicroHTTPDaemon.RequestDecision
    let shared = Locked(Shared())

    init(
        settings: MicroHTTPDaemon.Settings, connectionGuard: RelayConnectionGuard?,
        onHead: @escaping @Sendable (MicroHTTPDaemon.Head) -> MicroHTTPDaemon.HeadDecision,
        onRequest: @escaping @Sendable (MicroHTTPDaemon.Request) -> MicroHTTPDaemon.RequestDecision
    ) {
        self.settings = settings
        self.connectionGuard = connectionGuard
        self.onHead = onHead
        self.onRequest = onRequest
    }

    /// The access handler: called once with the head, once per body chunk, once at the end, and
    /// once more after each resume.
    func access(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?, upload: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>, requestPointer: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let existing = requestPointer.pointee else {
            connectionGuard?.headReceived(connection)
            let head = MicroHTTPDaemon.Head(
                method: method.map { String(cString: $0) } ?? "", path: url.map { String(cString: $0) } ?? "",
                contentLength: Self.contentLength(connection))
            let context = RequestContext(connection: connection, head: head)
            switch onHead(head) {
            case .answer(let answer):
                // With a body to refuse, answer now: libmicrohttpd reads none of it and closes
                // the connection afterwards. Without one, answer at the end of the request, so
                // the connection stays alive (libmicrohttpd closes after a first-call answer).
                if head.contentLength ?? 0 > 0 || hapi_mhd_header(connection, "Transfer-Encoding") != nil {
                    return Self.respond(connection, answer)
                }
                context.phase.withLock { $0 = .answered(answer) }
            case .readBody:
                break
            }
            requestPointer.pointee = Unmanaged.passRetained(context).toOpaque()
            shared.withLock { $0.openRequests += 1 }
            return .YES
        }
        let context = Unmanaged<RequestContext>.fromOpaque(existing).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            uploadSize.pointee = 0
            guard context.discarded == 0, context.body.count + count <= settings.maximumBodyBytes, let upload else {
                // Too large: libmicrohttpd cannot answer mid-upload, so read on (to a bound)
                // and answer 413 at the end.
                context.body = []
                context.discarded += count
                return context.discarded <= settings.maximumDiscardedBytes ? .YES : .NO
            }
            context.body.append(contentsOf: UnsafeRawBufferPointer(start: upload, count: count))
            return .YES
        }
        let phase = context.phase.withLock { $0 }
        if case .receiving = phase { connectionGuard?.requestReceived(connection) }
        if case .answered = phase { connectionGuard?.requestReceived(connection) }
        switch phase {
        case .receiving:
            let request = MicroHTTPDaemon.Request(
                head: context.head, body: context.body, bodyTooLarge: context.discarded > 0, clientAddress: Self.clientAddress(connection),
                forwardedFor: Self.header(connection, "X-Forwarded-For", limit: 256))
            context.body = []
            switch onRequest(request) {
            case .answer(let answer):
                context.phase.withLock { $0 = .finished }
                return Self.respond(connection, answer)
            case .later(let work):
                return suspend(context, work: work)
            }
        case .answered(let answer):
            context.phase.withLock { $0 = .finished }
            return Self.respond(connection, answer)
        case .suspended, .finished:
            return .YES
        }
    }

    /// Suspends first, then starts the work: a resume can never come before its suspend.
    private func suspend(_ context: RequestContext, work: @escaping @Sendable () async -> RelayHTTPAnswer) -> MHD_Result {
        let refusal = shared.withLock { shared -> RelayHTTPAnswer? in
            if let refusal = shared.refusingLaterAnswers { return refusal }
            context.phase.withLock { $0 = .suspended }
            MHD_suspend_connection(context.connection)
            shared.suspended[ObjectIdentifier(context)] = context
            return nil
        }
        if let refusal {
            context.phase.withLock { $0 = .finished }
            return Self.respond(context.connection, refusal)
        }
        Task { [self] in
            let answer = await work()
            complete(context, with: answer)
        }
        return .YES
    }

    /// Gives a suspended request its answer and resumes its connection, exactly once.
    func complete(_ context: RequestContext, with answer: RelayHTTPAnswer) {
        let resume = context.phase.withLock { phase -> Bool in
            guard case .suspended = phase else { return false }
            phase = .answered(answer)
            return true
        }
        guard resume else { return }
        MHD_resume_connection(context.connection)
        shared.withLock { _ = $0.suspended.removeValue(forKey: ObjectIdentifier(context)) }
    }

    /// libmicrohttpd is done with a request (answered, or the client went away).
    func finished(_ context: RequestContext) {
        context.phase.withLock { $0 = .finished }
        shared.withLock { $0.openRequests -= 1 }
    }

    static func respond(_ connection: OpaquePointer, _ answer: RelayHTTPAnswer) -> MHD_Result {
        answer.body.withUnsafeBytes { body in
            answer.contentType.withCString { type in
                hapi_mhd_respond(connection, UInt32(clamping: answer.status), body.baseAddress, body.count, type)
            }
        }
    }

    static func contentLength(_ connection: OpaquePointer) -> UInt64? {
        guard let value = hapi_mhd_header(connection, "Content-Length") else { return nil }
        var result: UInt64 = 0
        var digits = 0
        var pointer = value
        while pointer.pointee != 0 {
            let byte = UInt8(bitPattern: pointer.pointee)
            pointer += 1
            if byte == 0x20 || byte == 0x09 { continue }
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            digits += 1
            let (times10, overflow1) = result.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - 0x30))
            if overflow1 || overflow2 { return .max }
            result = sum
        }
        return digits > 0 ? result : nil
    }

    static func clientAddress(_ connection: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        guard hapi_mhd_client_address(connection, &buffer, buffer.count) else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func header(_ connection: OpaquePointer, _ name: String, limit: Int) -> String? {
        guard let value = hapi_mhd_header(connection, name) else { return nil }
        let length = min(strlen(value), limit)
        return String(decoding: UnsafeRawBufferPointer(start: value, count: length), as: UTF8.self)
    }
}

private let accessTrampoline: MHD_AccessHandlerCallback = { cls, connection, url, method, _, upload, uploadSize, requestPointer in
    guard let cls, let connection, let uploadSize, let requestPointer else { return .NO }
    let core = Unmanaged<DaemonCore>.fromOpaque(cls).takeUnretainedValue()
    return core.access(connection, url: url, method: method, upload: upload, uploadSize: uploadSize, requestPointer: requestPointer)
}

private let completedTrampoline: MHD_RequestCompletedCallback = { cls, connection, requestPointer, _ in
    guard let cls else { return }
    let core = Unmanaged<DaemonCore>.fromOpaque(cls).takeUnretainedValue()
    if let connection { core.connectionGuard?.requestCompleted(connection) }
    guard let requestPointer, let raw = requestPointer.pointee else { return }
    requestPointer.pointee = nil
    core.finished(Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue())
}

private let notifyTrampoline: MHD_NotifyConnectionCallback = { cls, connection, _, event in
    guard let cls, let connection else { return }
    let core = Unmanaged<DaemonCore>.fromOpaque(cls).takeUnretainedValue()
    guard let connectionGuard = core.connectionGuard else { return }
    if hapi_mhd_notify_started(event) {
        connectionGuard.connectionStarted(connection)
    } else if hapi_mhd_notify_closed(event) {
        connectionGuard.connectionClosed(connection)
    }
}
