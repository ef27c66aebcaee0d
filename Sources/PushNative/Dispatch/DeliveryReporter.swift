import PushEnvelope
import PushTransports

/// What follows a delivery's result in the hub, written once for a native device and a Web Push
/// subscription alike (the transports' pipeline has already logged it): the delivery is counted,
/// and timed when a request was made; when the provider called the registration dead, it is
/// removed from the store. A store that fails there leaves a dead registration behind: said in
/// the report (`pruneFailure`), in a second log record (`prune_failed=`) and in
/// `hapi_push_prune_failures_total`, never dropped, so the next dispatch or an operator can deal
/// with it.
struct DeliveryReporter: Sendable {
    let logger: any PushLogger
    let metrics: DispatchMetrics

    /// Removes the registration `result` calls dead with `remove` (whether a row went); on a
    /// failure, why, sanitized of `secrets` (the token; the endpoint and its keys), which no
    /// store error may show.
    func prune(
        _ result: PushResult, transport: PushTransportName, platform: String, tokenHash: String, secrets: [String],
        remove: () async throws -> Bool
    ) async -> (removed: Bool, failure: String?) {
        do {
            return (try await remove(), nil)
        } catch {
            let failure = SafeText.sanitize(String(describing: error), limit: 200, redactingTokens: true, secrets: secrets)
            metrics.pruneFailed(transport)
            logger.log(
                PushLogRecord(
                    platform: platform, transport: transport, tokenHash: tokenHash, outcome: result.outcome, reason: result.reason,
                    detail: result.detail, status: result.status, milliseconds: result.latency.reportedMilliseconds, pruneFailure: failure))
            return (false, failure)
        }
    }

    /// Counts one delivery that went to a transport by its outcome and reason.
    func delivered(_ result: PushResult, transport: PushTransportName) {
        metrics.delivered(transport: transport, outcome: result.outcome, reason: result.reason, sent: result.attempts > 0, latency: result.latency)
    }
}
