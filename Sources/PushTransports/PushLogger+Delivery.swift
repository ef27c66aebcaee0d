import PushProviders
import PushTelemetry

/// What the log record of a delivery says about whom it went to: a platform and a token
/// fingerprint, never the token (or a Web Push endpoint, which is a capability). Native
/// deliveries and Web Push subscriptions alike, so the pipeline writes one record for both.
protocol LoggableDelivery: Sendable {
    /// `ios`, `phone`, `wear` or `web`.
    var logPlatform: String { get }
    /// The first 12 hex digits of the token's (the endpoint's) SHA-256.
    var tokenHash: String { get }
}

extension PushDelivery: LoggableDelivery {
    var logPlatform: String { target.rawValue }
}

/// A transport's record of one delivery (PushLogger lives in PushTelemetry, the delivery here).
extension PushLogger {
    func log(_ delivery: some LoggableDelivery, transport: PushTransportName, _ result: PushResult) {
        // The fingerprint is a SHA-256: not computed for a logger that drops everything.
        guard isEnabled else { return }
        log(
            PushLogRecord(
                platform: delivery.logPlatform, transport: transport, tokenHash: delivery.tokenHash, outcome: result.outcome,
                reason: result.reason, detail: result.detail, status: result.status, milliseconds: result.latency.reportedMilliseconds))
    }
}
