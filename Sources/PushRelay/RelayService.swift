import PushTelemetry
import PushProviders

/// The relay's behaviour behind the HTTP server: routes, validation, the abuse limit,
/// forwarding, one log line per push, and the counters. Each answer is given by exactly one
/// path through here, and recorded once.
final class RelayService: Sendable {
    static let serviceName = "hapi-push-relay"

    let apns: RelayAPNsForwarder?
    let fcm: RelayFCMForwarder?
    let limiter: any PushRelayRateLimiter
    let trustProxy: Bool
    let providerTimeout: Duration
    let version: String
    let metrics: RelayMetrics
    let log: @Sendable (String) -> Void

    init(
        apns: RelayAPNsForwarder?, fcm: RelayFCMForwarder?, limiter: any PushRelayRateLimiter, trustProxy: Bool, providerTimeout: Duration,
        version: String, metrics: RelayMetrics, log: @escaping @Sendable (String) -> Void
    ) {
        self.apns = apns
        self.fcm = fcm
        self.limiter = limiter
        self.trustProxy = trustProxy
        self.providerTimeout = providerTimeout
        self.version = version
        self.metrics = metrics
        self.log = log
    }

    /// `GET /health`, `POST /v1/push` (body read only when it may fit), 404, 405.
    func head(_ head: MicroHTTPDaemon.Head) -> MicroHTTPDaemon.HeadDecision {
        switch head.path {
        case "/health":
            return .answer(recorded(head.method == "GET" ? .health(version: version) : .methodNotAllowed))
        case "/v1/push":
            guard head.method == "POST" else { return .answer(recorded(.methodNotAllowed)) }
            if let length = head.contentLength, length > UInt64(PushRelayConfiguration.maximumBodyBytes) {
                return .answer(recorded(Self.tooLarge))
            }
            return .readBody
        default:
            return .answer(recorded(.notFound))
        }
    }

    /// A whole `POST /v1/push`: invalid → answered now; valid → limited and forwarded later.
    func request(_ request: MicroHTTPDaemon.Request) -> MicroHTTPDaemon.RequestDecision {
        if request.bodyTooLarge { return .answer(recorded(Self.tooLarge)) }
        let push: RelayPush
        switch RelayPush.validate(request.body) {
        case .invalid(let answer): return .answer(recorded(answer))
        case .valid(let valid): push = valid
        }
        let client = clientKey(request)
        let started = ContinuousClock.now
        let configured = push.platform == .ios ? apns != nil : fcm != nil
        guard configured else {
            let answer = RelayHTTPAnswer.error(501, .unsupportedPlatform, message: "platform \(push.platform.rawValue) is not configured on this relay")
            metrics.pushStarted()
            return .answer(finish(push, answer, provider: nil, limitedBy: nil, started: started))
        }
        return .later { [self] in
            metrics.pushStarted()
            let admission = await limiter.admit(client: client, device: push.deviceKey)
            guard admission == .admitted else {
                return finish(push, .rateLimited, provider: nil, limitedBy: admission.rawValue, started: started)
            }
            let deadline = started + providerTimeout
            let outcome: RelayProviderOutcome
            switch push.platform {
            case .ios: outcome = await apns?.forward(push, deadline: deadline) ?? RelayProviderOutcome(.upstream)
            case .android: outcome = await fcm?.forward(push, deadline: deadline) ?? RelayProviderOutcome(.upstream)
            }
            return finish(push, outcome.answer, provider: outcome, limitedBy: nil, started: started)
        }
    }

    static let tooLarge = RelayHTTPAnswer.error(413, .tooLarge, message: "the request body is larger than \(PushRelayConfiguration.maximumBodyBytes) bytes")

    /// The rate-limit key of the client: its socket address, or behind a trusted proxy the
    /// first `X-Forwarded-For` hop; `unknown` when neither is known.
    func clientKey(_ request: MicroHTTPDaemon.Request) -> String {
        if trustProxy, let forwarded = request.forwardedFor {
            let first = forwarded.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let hop = first.trimmingASCIIWhitespace
            if !hop.isEmpty { return String(hop.prefix(64)) }
        }
        return request.clientAddress.isEmpty ? "unknown" : request.clientAddress
    }

    /// Logs the push's one line, counts it, and returns its answer.
    private func finish(
        _ push: RelayPush, _ answer: RelayHTTPAnswer, provider: RelayProviderOutcome?, limitedBy scope: String?,
        started: ContinuousClock.Instant
    ) -> RelayHTTPAnswer {
        let milliseconds = (ContinuousClock.now - started).reportedMilliseconds
        var line = "push platform=\(push.platform.rawValue) token=\(push.tokenHash) outcome=\(answer.outcome) status=\(answer.status)"
        if let scope { line += " limit=\(scope)" }
        if let provider {
            line += " provider=" + (push.platform == .ios ? "apns" : "fcm")
            if let status = provider.providerStatus { line += " provider_status=\(status)" }
            if let reason = provider.reason, !reason.isEmpty { line += " reason=\(reason)" }
        }
        log(line + " ms=\(milliseconds)")
        metrics.pushFinished(
            platform: push.platform.rawValue, outcome: answer.outcome, seconds: Double(milliseconds) / 1000, limitedBy: scope)
        return recorded(answer)
    }

    private func recorded(_ answer: RelayHTTPAnswer) -> RelayHTTPAnswer {
        metrics.recordAnswer(status: answer.status)
        return answer
    }
}

extension Substring {
    fileprivate var trimmingASCIIWhitespace: Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}
