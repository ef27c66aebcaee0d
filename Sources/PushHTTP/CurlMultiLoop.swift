import CHapiCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushSync
import Synchronization

/// One libcurl multi handle driven by one dedicated thread.
///
/// Other threads only ever enqueue commands (`add`, `cancel`) under a lock and wake the
/// thread with `curl_multi_wakeup`; the thread owns the multi handle and every easy handle,
/// loops on `curl_multi_poll`, and resumes callers through their transfers. No Swift
/// concurrency thread ever waits on the network.
///
/// The thread holds the loop strongly until it exits; it exits after `beginShutdown()` (or
/// `shutdown()`), having failed every queued and running transfer with `.shutdown`, freed every
/// easy handle and cleaned up the multi handle.
final class CurlMultiLoop: Sendable {
    enum Command: Sendable {
        case add(HTTPTransfer)
        case addAll([HTTPTransfer])
        case cancel(HTTPTransfer)
    }

    /// What every easy handle of this loop shares.
    struct Settings: Sendable {
        var connectTimeout: Duration
        var maximumResponseBodyBytes: Int
        var trustStore: CurlTrustStore?
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

    /// The `CURLM *`. Off the loop thread it is only passed to `curl_multi_wakeup` (documented
    /// as callable from any thread), always under `shared`'s lock and only while the phase is
    /// `.running`: the loop cleans the handle up only after it has seen another phase under
    /// that same lock, so no wakeup can reach a freed handle.
    private struct MultiHandle: @unchecked Sendable {
        let raw: UnsafeMutableRawPointer
    }

    let settings: Settings
    let counters: HTTPCounters
    private let multi: MultiHandle
    private let shared = Locked(Shared())
    /// The loop's thread, set once it has started (before `start` returns the loop).
    private let thread = Locked<PushThread?>(nil)

    /// `curl_global_init`, once per process, before the first handle.
    private static let globalInitResult: Int = Int(hapi_curl_global_init_all().rawValue)

    private init(multi: UnsafeMutableRawPointer, settings: Settings, counters: HTTPCounters) {
        self.multi = MultiHandle(raw: multi)
        self.settings = settings
        self.counters = counters
    }

    /// Creates the multi handle and starts its thread.
    static func start(
        settings: Settings, counters: HTTPCounters, maximumConnectionsPerHost: Int, maximumConcurrentStreams: Int,
        maximumCachedConnections: Int
    ) throws(HTTPClientError) -> CurlMultiLoop {
        guard globalInitResult == Int(CURLE_OK.rawValue) else {
            throw HTTPClientError(.other, curlCode: globalInitResult, detail: "curl_global_init failed")
        }
        guard let info = hapi_curl_version_info(), info.pointee.version_num >= 0x07_55_00 else {
            throw HTTPClientError(.invalidConfiguration, detail: "libcurl 7.85.0 or later is required")
        }
        guard let multi = curl_multi_init() else {
            throw HTTPClientError(.other, detail: "curl_multi_init failed (out of memory)")
        }
        let options: [(CURLMoption, Int, String)] = [
            (CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX), "CURLMOPT_PIPELINING"),
            (CURLMOPT_MAX_HOST_CONNECTIONS, maximumConnectionsPerHost, "CURLMOPT_MAX_HOST_CONNECTIONS"),
            (CURLMOPT_MAX_CONCURRENT_STREAMS, maximumConcurrentStreams, "CURLMOPT_MAX_CONCURRENT_STREAMS"),
            (CURLMOPT_MAXCONNECTS, maximumCachedConnections, "CURLMOPT_MAXCONNECTS"),
        ]
        for (option, value, name) in options {
            let rc = hapi_curl_multi_setopt_long(multi, option, value)
            guard rc == CURLM_OK else {
                curl_multi_cleanup(multi)
                throw HTTPClientError(
                    .invalidConfiguration, curlCode: Int(rc.rawValue),
                    detail: "\(name): \(String(cString: curl_multi_strerror(rc)))")
            }
        }

        let loop = CurlMultiLoop(multi: multi, settings: settings, counters: counters)
        let thread: PushThread
        do {
            thread = try PushThread.start(name: "hapi-push-curl") { loop.run() }
        } catch {
            curl_multi_cleanup(multi)
            throw HTTPClientError(.other, detail: "cannot start the HTTP client thread (\(error.call): \(error.code))")
        }
        loop.thread.withLock { $0 = thread }
        return loop
    }

    // MARK: - Any thread

    /// Queues a command for the loop thread. False once shutdown has begun.
    func enqueue(_ command: Command) -> Bool {
        shared.withLock { shared in
            guard case .running = shared.phase else { return false }
            let wasEmpty = shared.commands.isEmpty
            shared.commands.append(command)
            // A non-empty queue means a wakeup is already pending.
            if wasEmpty { _ = curl_multi_wakeup(multi.raw) }
            return true
        }
    }

    /// Starts shutting down without waiting. Idempotent.
    func beginShutdown() {
        shared.withLock { shared in
            guard case .running = shared.phase else { return }
            shared.phase = .shuttingDown
            _ = curl_multi_wakeup(multi.raw)
        }
    }

    /// Shuts down and waits until the thread has freed everything and been joined. Idempotent.
    func shutdown() async {
        beginShutdown()
        await thread.withLock({ $0 })?.joined()
    }

    // MARK: - Loop thread

    /// The easy handles on the multi handle. Loop thread only.
    private struct Registry {
        private var byEasy: [UInt: CurlEasyHandle] = [:]
        private var byTransfer: [ObjectIdentifier: UInt] = [:]

        mutating func insert(_ handle: CurlEasyHandle) {
            let key = UInt(bitPattern: handle.raw)
            byEasy[key] = handle
            byTransfer[ObjectIdentifier(handle.transfer)] = key
        }

        mutating func remove(easy: UnsafeMutableRawPointer) -> CurlEasyHandle? {
            guard let handle = byEasy.removeValue(forKey: UInt(bitPattern: easy)) else { return nil }
            byTransfer[ObjectIdentifier(handle.transfer)] = nil
            return handle
        }

        mutating func remove(transfer: HTTPTransfer) -> CurlEasyHandle? {
            guard let key = byTransfer.removeValue(forKey: ObjectIdentifier(transfer)) else { return nil }
            return byEasy.removeValue(forKey: key)
        }

        var isEmpty: Bool { byEasy.isEmpty }

        /// Removes and returns the handles whose transfer's deadline has passed.
        mutating func removeExpired(at now: ContinuousClock.Instant) -> [CurlEasyHandle] {
            let expired = byEasy.values.filter { $0.transfer.deadline <= now }
            for handle in expired { _ = remove(easy: handle.raw) }
            return expired
        }

        mutating func removeAll() -> [CurlEasyHandle] {
            defer {
                byEasy = [:]
                byTransfer = [:]
            }
            return Array(byEasy.values)
        }
    }

    /// How long the loop sleeps while transfers are in flight. libcurl's own timers wake it
    /// sooner; this bounds two cases its timers miss: an answer to libcurl's internal GOAWAY
    /// retry, and a transfer queued behind a connection still being set up, which
    /// `CURLOPT_TIMEOUT_MS` does not time.
    static let busyPollMilliseconds: Int32 = 50

    private func run() {
        var registry = Registry()
        var commands: [Command] = []
        var lastSweep = ContinuousClock.now
        while true {
            let stopping = shared.withLock { shared in
                swap(&commands, &shared.commands)
                if case .running = shared.phase { return false }
                return true
            }
            for command in commands {
                switch command {
                case .add(let transfer):
                    add(transfer, stopping: stopping, into: &registry)
                case .addAll(let transfers):
                    for transfer in transfers { add(transfer, stopping: stopping, into: &registry) }
                case .cancel(let transfer):
                    if let handle = registry.remove(transfer: transfer) {
                        detach(handle)
                        transfer.abort(with: .cancelled)
                    }
                }
            }
            commands.removeAll(keepingCapacity: true)
            if stopping { break }

            var running: Int32 = 0
            _ = curl_multi_perform(multi.raw, &running)
            collectFinished(&registry)
            let now = ContinuousClock.now
            if now - lastSweep >= .milliseconds(Int64(Self.busyPollMilliseconds)) {
                lastSweep = now
                expire(&registry, at: now)
            }
            let rc = curl_multi_poll(multi.raw, nil, 0, registry.isEmpty ? 1000 : Self.busyPollMilliseconds, nil)
            if rc != CURLM_OK {
                // Not expected; never spin if polling keeps failing.
                usleep(10_000)
            }
        }

        for handle in registry.removeAll() {
            detach(handle)
            handle.transfer.abort(with: .shutdown)
        }
        curl_multi_cleanup(multi.raw)
        shared.withLock { $0.phase = .exited }
    }

    private func add(_ transfer: HTTPTransfer, stopping: Bool, into registry: inout Registry) {
        if stopping {
            transfer.abort(with: .shutdown)
        } else if transfer.willStart() {
            launch(transfer, into: &registry)
        }
    }

    /// Puts the transfer on the multi handle; if that fails, completes it with the error.
    private func launch(_ transfer: HTTPTransfer, into registry: inout Registry) {
        let failure: HTTPClientError
        let remaining = transfer.remainingTime
        if remaining <= .zero {
            failure = HTTPClientError(.timeout, detail: "the request's timeout was spent before it started")
        } else {
            do throws(HTTPClientError) {
                let handle = try CurlEasyHandle.make(for: transfer, timeout: remaining, settings: settings, counters: counters)
                let rc = curl_multi_add_handle(multi.raw, handle.raw)
                if rc == CURLM_OK {
                    registry.insert(handle)
                    counters.requestsSent.add(1, ordering: .relaxed)
                    return
                }
                handle.release()
                failure = HTTPClientError(
                    .other, curlCode: Int(rc.rawValue),
                    detail: "curl_multi_add_handle: \(String(cString: curl_multi_strerror(rc)))")
            } catch {
                failure = error
            }
        }
        transfer.complete(.failure(failure))
    }

    /// Fails the transfers whose own deadline passed, whatever libcurl thinks of them: the
    /// request timeout is the caller's promise, including time spent waiting for a connection.
    private func expire(_ registry: inout Registry, at now: ContinuousClock.Instant) {
        for handle in registry.removeExpired(at: now) {
            detach(handle)
            handle.transfer.complete(.failure(HTTPClientError(.timeout, detail: "the request's timeout passed")))
        }
    }

    /// Takes a handle off the multi handle and frees it.
    private func detach(_ handle: CurlEasyHandle) {
        _ = curl_multi_remove_handle(multi.raw, handle.raw)
        handle.release()
    }

    /// Completes every transfer libcurl has finished.
    private func collectFinished(_ registry: inout Registry) {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi.raw, &remaining) {
            guard hapi_curl_msg_is_done(message) != 0, let easy = hapi_curl_msg_easy(message) else { continue }
            let code = hapi_curl_msg_result(message)
            // The message is invalid once its handle is removed: everything is read above.
            guard let handle = registry.remove(easy: easy) else {
                _ = curl_multi_remove_handle(multi.raw, easy)
                continue
            }
            let outcome = handle.outcome(code)
            detach(handle)
            handle.transfer.complete(outcome)
        }
    }
}
