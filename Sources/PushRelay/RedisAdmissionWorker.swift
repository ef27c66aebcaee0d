import CHapiRedis
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushSync

/// The one thread that talks to Redis for a `RedisPushRelayRateLimiter`, over one connection.
///
/// Pushes enqueue their two keys and suspend on a continuation; the thread takes everything
/// queued (up to `maximumBatch`), sends it as one pipelined write of `EVALSHA`s and reads the
/// answers, so under load one round trip decides many pushes. While there is no connection a
/// push is not queued at all: it is answered `unavailable` at once (the limiter then decides it
/// in memory), and the thread reconnects on its own with backoff. No push ever waits for a
/// connection attempt, only for a command on a connection that was up, and every read or write
/// of one is bounded by the command timeout.
final class RedisAdmissionWorker: @unchecked Sendable {
    // @unchecked: everything mutable lives in `Shared`, touched only under its mutex.
    enum Verdict: Sendable, Equatable {
        case decided(PushRelayAdmission)
        /// Redis could not decide: the caller decides locally.
        case unavailable
    }

    struct Job {
        let clientKey: [UInt8]
        let deviceKey: [UInt8]
        let continuation: UnsafeContinuation<Verdict, Never>
    }

    struct Settings: Sendable {
        var redis: PushRelayRedisConfiguration
        var clientLimit: PushRelayRateLimit
        var deviceLimit: PushRelayRateLimit
        var maximumBatch = 256
    }

    /// The queue and the flags, shared by callers and the thread (which must not keep the
    /// worker itself alive: releasing it is what stops the thread).
    final class Shared: @unchecked Sendable {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        let wakeup = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        var queue: [Job] = []
        /// A connection is up: pushes may queue.
        var up = false
        var sleeping = false
        var closing = false
        var firstResult: RedisLinkError??
        var firstWaiters: [UnsafeContinuation<RedisLinkError?, Never>] = []

        init() {
            pthread_mutex_init(mutex, nil)
            var attributes = pthread_condattr_t()
            pthread_condattr_init(&attributes)
            pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
            pthread_cond_init(wakeup, &attributes)
            pthread_condattr_destroy(&attributes)
        }

        deinit {
            pthread_cond_destroy(wakeup)
            pthread_mutex_destroy(mutex)
            wakeup.deallocate()
            mutex.deallocate()
        }

        func lock() { pthread_mutex_lock(mutex) }
        func unlock() { pthread_mutex_unlock(mutex) }
    }

    private let shared = Shared()
    /// The connection's thread; nil when the system refused one (every push is then decided
    /// locally, and the first attempt reports why).
    private let thread: PushThread?

    init(settings: Settings, report: RedisLimiterReport) {
        let loop = RedisAdmissionLoop(shared: shared, settings: settings, report: report)
        do {
            thread = try PushThread.start(name: "hapi-redis") { loop.main() }
        } catch {
            thread = nil
            shared.lock()
            shared.firstResult = .some(RedisLinkError(.unavailable, "no thread for the Redis connection: \(error)"))
            shared.unlock()
        }
    }

    deinit {
        shared.lock()
        shared.closing = true
        pthread_cond_broadcast(shared.wakeup)
        shared.unlock()
    }

    /// Redis's decision for one push, or `unavailable` at once when there is no connection.
    func decide(clientKey: [UInt8], deviceKey: [UInt8]) async -> Verdict {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Verdict, Never>) in
            shared.lock()
            guard shared.up, !shared.closing else {
                shared.unlock()
                continuation.resume(returning: .unavailable)
                return
            }
            shared.queue.append(Job(clientKey: clientKey, deviceKey: deviceKey, continuation: continuation))
            if shared.sleeping { pthread_cond_signal(shared.wakeup) }
            shared.unlock()
        }
    }

    /// The outcome of the first connection attempt (nil: connected), once it is known.
    func firstAttempt() async -> RedisLinkError? {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<RedisLinkError?, Never>) in
            shared.lock()
            if let result = shared.firstResult {
                shared.unlock()
                continuation.resume(returning: result)
                return
            }
            shared.firstWaiters.append(continuation)
            shared.unlock()
        }
    }

    /// Answers what is queued `unavailable`, closes the connection and joins the thread (it
    /// ends within one command timeout); the calling task suspends meanwhile.
    func shutdown() async {
        shared.lock()
        shared.closing = true
        pthread_cond_broadcast(shared.wakeup)
        shared.unlock()
        await thread?.joined()
    }
}

/// What the worker's thread owns: the connection, the script's SHA, the backoff.
final class RedisAdmissionLoop {
    typealias Shared = RedisAdmissionWorker.Shared
    typealias Job = RedisAdmissionWorker.Job
    typealias Verdict = RedisAdmissionWorker.Verdict

    static let firstBackoffMilliseconds: Int64 = 100

    let shared: Shared
    let settings: RedisAdmissionWorker.Settings
    let report: RedisLimiterReport
    private var link: (any RedisLink)?
    private var sha: [UInt8] = []
    private var tls: RedisTLSContext?
    private var failures = 0
    /// Connections in a row that ended because the server could not run the script (a
    /// replica, loading): each next one waits longer, as failed attempts do.
    private var cannotDecideStreak = 0
    /// Set by `run` when its connection ended that way.
    private var lostBecauseServerCannotDecide = false
    private var nextAttempt: Int64 = 0

    init(shared: Shared, settings: RedisAdmissionWorker.Settings, report: RedisLimiterReport) {
        self.shared = shared
        self.settings = settings
        self.report = report
    }

    // MARK: - The thread

    func main() {
        // A write to a connection the server closed raises SIGPIPE in the writing thread
        // (hiredis and OpenSSL write without MSG_NOSIGNAL): blocked here, it stays pending
        // on this thread instead of killing the host, and the write fails with EPIPE.
        var pipe = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipe, nil)

        shared.lock()
        while !shared.closing {
            if link == nil {
                let now = RedisTLSLink.monotonicMilliseconds()
                if now >= nextAttempt {
                    shared.unlock()
                    let outcome = establish()
                    settle(outcome)
                    shared.lock()
                    continue
                }
                waitLocked(untilMonotonicMilliseconds: nextAttempt)
                continue
            }
            if shared.queue.isEmpty {
                shared.sleeping = true
                pthread_cond_wait(shared.wakeup, shared.mutex)
                shared.sleeping = false
                continue
            }
            let count = min(shared.queue.count, settings.maximumBatch)
            let batch = Array(shared.queue.prefix(count))
            shared.queue.removeFirst(count)
            shared.unlock()
            let (verdicts, lost) = run(batch)
            // The loss is recorded first, so a push decided locally finds the status degraded.
            if let lost { connectionLost(lost) }
            for (job, verdict) in zip(batch, verdicts) { job.continuation.resume(returning: verdict) }
            discardPendingSIGPIPE()
            shared.lock()
        }
        // Closing: nothing more is decided in Redis.
        shared.up = false
        let orphans = shared.queue
        shared.queue.removeAll()
        let waiters = shared.firstWaiters
        shared.firstWaiters.removeAll()
        if shared.firstResult == nil { shared.firstResult = .some(RedisLinkError(.unavailable, "the limiter was shut down")) }
        let first = shared.firstResult ?? nil
        shared.unlock()
        for job in orphans { job.continuation.resume(returning: .unavailable) }
        for waiter in waiters { waiter.resume(returning: first) }
        link?.close()
        link = nil
    }

    private func waitLocked(untilMonotonicMilliseconds deadline: Int64) {
        var until = timespec()
        until.tv_sec = Int(deadline / 1000)
        until.tv_nsec = Int(deadline % 1000) * 1_000_000
        shared.sleeping = true
        _ = pthread_cond_timedwait(shared.wakeup, shared.mutex, &until)
        shared.sleeping = false
    }

    /// Records a connection attempt's outcome: the link goes up, or the next attempt is set.
    private func settle(_ outcome: Result<any RedisLink, RedisLinkError>) {
        let error: RedisLinkError?
        switch outcome {
        case .success(let established):
            link = established
            failures = 0
            error = nil
        case .failure(let failure):
            failures += 1
            nextAttempt = RedisTLSLink.monotonicMilliseconds() + backoff(failures)
            error = failure
        }
        // Pushes may queue before the status says connected, never the other way round: a
        // caller that sees "connected" has its next push decided in Redis.
        shared.lock()
        shared.up = error == nil
        let waiters = shared.firstWaiters
        shared.firstWaiters.removeAll()
        if shared.firstResult == nil { shared.firstResult = .some(error) }
        shared.unlock()
        if let error { report.failed(error, connection: true) } else { report.connected() }
        for waiter in waiters { waiter.resume(returning: error) }
    }

    /// The link failed mid-exchange: close it, answer what queued meanwhile `unavailable`, and
    /// try again at once (then with backoff).
    private func connectionLost(_ error: RedisLinkError) {
        link?.close()
        link = nil
        let cannotDecide = lostBecauseServerCannotDecide
        lostBecauseServerCannotDecide = false
        if cannotDecide {
            // It will answer a new connection at once and refuse the script again: back off.
            cannotDecideStreak += 1
            nextAttempt = RedisTLSLink.monotonicMilliseconds() + backoff(cannotDecideStreak)
        } else {
            nextAttempt = 0
        }
        report.failed(error, connection: true, serverCannotDecide: cannotDecide)
        shared.lock()
        shared.up = false
        let orphans = shared.queue
        shared.queue.removeAll()
        shared.unlock()
        for job in orphans { job.continuation.resume(returning: .unavailable) }
    }

    /// 100 ms after the first failed attempt, doubling up to `maximumBackoff`, ±20% so a fleet
    /// does not reconnect in step.
    private func backoff(_ failures: Int) -> Int64 {
        let ceiling = max(Self.firstBackoffMilliseconds, settings.redis.maximumBackoff.wholeMilliseconds)
        let base = Self.firstBackoffMilliseconds << Int64(min(failures - 1, 20))
        let delay = Double(min(ceiling, base)) * Double.random(in: 0.8...1.2)
        return max(1, Int64(delay))
    }

    private func discardPendingSIGPIPE() {
        var pipe = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        var pending = sigset_t()
        sigpending(&pending)
        guard sigismember(&pending, SIGPIPE) == 1 else { return }
        var zero = timespec(tv_sec: 0, tv_nsec: 0)
        _ = sigtimedwait(&pipe, nil, &zero)
    }

    // MARK: - Redis

    /// Connects and prepares a connection: `AUTH`, `SELECT`, `CLIENT SETNAME`, `SCRIPT LOAD`,
    /// pipelined in one round trip.
    private func establish() -> Result<any RedisLink, RedisLinkError> {
        let redis = settings.redis
        let opened: any RedisLink
        do {
            if redis.usesTLS {
                let context: RedisTLSContext
                if let made = tls {
                    context = made
                } else {
                    context = try RedisTLSContext(caFile: redis.caFile, caFileVariable: redis.caFileVariable)
                    tls = context
                }
                opened = try RedisTLSLink.connect(
                    host: redis.host, port: redis.port, context: context, connectTimeout: redis.connectTimeout, commandTimeout: redis.commandTimeout)
            } else {
                opened = try HiredisLink.connect(host: redis.host, port: redis.port, connectTimeout: redis.connectTimeout, commandTimeout: redis.commandTimeout)
            }
        } catch {
            return .failure(error)
        }
        var commands: [[[UInt8]]] = []
        if let password = redis.password {
            commands.append([Array("AUTH".utf8)] + (redis.username.map { [Array($0.utf8)] } ?? []) + [Array(password.utf8)])
        }
        if redis.database != 0 { commands.append([Array("SELECT".utf8), Array(String(redis.database).utf8)]) }
        commands.append([Array("CLIENT".utf8), Array("SETNAME".utf8), Array("hapi-push-relay".utf8)])
        commands.append(RedisBucketScript.loadCommand)
        do {
            let replies = try opened.exchange(commands)
            var index = 0
            if redis.password != nil {
                if let message = replies[index].errorMessage {
                    opened.close()
                    return .failure(Self.classify(replies[index], RedisLinkError(.refused, "the server refused the credentials: \(message)")))
                }
                index += 1
            }
            if redis.database != 0 {
                if let message = replies[index].errorMessage {
                    opened.close()
                    return .failure(Self.classify(replies[index], RedisLinkError(.refused, "cannot select database \(redis.database): \(message)")))
                }
                index += 1
            }
            // CLIENT SETNAME only names the connection for an operator; an ACL may forbid it.
            if replies[index].errorCode == "NOAUTH" {
                opened.close()
                return .failure(RedisLinkError(.refused, "the server requires a password: put it in RELAY_REDIS_URL (redis://:PASSWORD@host)"))
            }
            index += 1
            let load = replies[index]
            if let message = load.errorMessage {
                opened.close()
                return .failure(Self.classify(load, RedisLinkError(.refused, "cannot load the rate-limit script: \(message)")))
            }
            guard let loaded = RedisBucketScript.sha(load) else {
                opened.close()
                return .failure(RedisLinkError(.unavailable, "SCRIPT LOAD gave an unexpected answer"))
            }
            sha = loaded
            return .success(opened)
        } catch {
            opened.close()
            return .failure(error)
        }
    }

    /// Script errors after which the connection is dropped and made again.
    static let connectionEndingErrors: Set<String> = ["READONLY", "LOADING", "MASTERDOWN"]

    /// Errors that say "not now" rather than "not this configuration".
    private static func classify(_ reply: RedisReply, _ refusal: RedisLinkError) -> RedisLinkError {
        let transient: Set<String> = ["LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN", "OOM"]
        guard let code = reply.errorCode, transient.contains(code) else { return refusal }
        return RedisLinkError(.unavailable, refusal.message)
    }

    /// Decides `batch` (one verdict per job, in order), and the error that ended the
    /// connection, if one did.
    private func run(_ batch: [Job]) -> ([Verdict], RedisLinkError?) {
        let none = [Verdict](repeating: .unavailable, count: batch.count)
        if let current = link, current.looksClosed {
            // Closed while idle (a server restart, its idle timeout): one fresh connection,
            // bounded by the connect timeout, before giving up on this batch.
            current.close()
            link = nil
            switch establish() {
            case .success(let fresh):
                link = fresh
                report.connected()
            case .failure(let error):
                return (none, error)
            }
        }
        guard let link else { return (none, RedisLinkError(.unavailable, "no connection")) }
        do {
            let replies = try link.exchange(batch.map(command))
            var verdicts = none
            var missingScript: [Int] = []
            var decided = 0
            for (index, reply) in replies.enumerated() {
                if let admission = RedisBucketScript.admission(reply) {
                    verdicts[index] = .decided(admission)
                    decided += 1
                } else if reply.errorCode == "NOSCRIPT" {
                    missingScript.append(index)
                } else if let code = reply.errorCode, Self.connectionEndingErrors.contains(code) {
                    // A replica after a fail-over, or a server still loading: this connection
                    // will not decide anything soon. Drop it; the reconnection (by name, so a
                    // moved DNS entry is followed) finds the new primary.
                    lostBecauseServerCannotDecide = true
                    return (none, RedisLinkError(.unavailable, "the server cannot run the rate-limit script: \(reply.errorMessage ?? code)"))
                } else {
                    report.failed(RedisLinkError(.unavailable, reply.errorMessage.map { "the rate-limit script failed: \($0)" } ?? "the rate-limit script gave an unexpected answer"))
                }
            }
            if !missingScript.isEmpty {
                // The script cache was flushed (SCRIPT FLUSH, a restart, a fail-over to a
                // replica that never saw it): load it again and retry those pushes once.
                let loaded = try link.exchange([RedisBucketScript.loadCommand]).first ?? .null
                if let fresh = RedisBucketScript.sha(loaded) {
                    sha = fresh
                    let again = try link.exchange(missingScript.map { command(batch[$0]) })
                    for (position, reply) in zip(missingScript, again) {
                        if let admission = RedisBucketScript.admission(reply) {
                            verdicts[position] = .decided(admission)
                            decided += 1
                        }
                    }
                } else {
                    report.failed(RedisLinkError(.unavailable, loaded.errorMessage.map { "cannot load the rate-limit script: \($0)" } ?? "SCRIPT LOAD gave an unexpected answer"))
                }
            }
            if decided > 0 {
                cannotDecideStreak = 0
                report.decidedInRedis()
            }
            return (verdicts, nil)
        } catch {
            return (none, error)
        }
    }

    private func command(_ job: Job) -> [[UInt8]] {
        RedisBucketScript.evaluate(
            sha: sha, clientKey: job.clientKey, deviceKey: job.deviceKey, client: settings.clientLimit, device: settings.deviceLimit)
    }
}
