import PushProviders
import PushTelemetry

/// A transport's record of one delivery (PushLogger lives in PushTelemetry, the delivery here).
extension PushLogger {
    func log(_ delivery: PushDelivery, transport: PushTransportName, _ result: PushResult) {
        guard isEnabled else { return }
        let milliseconds = Int(result.latency.components.seconds * 1000 + result.latency.components.attoseconds / 1_000_000_000_000_000)
        log(
            PushLogRecord(
                platform: delivery.target.rawValue, transport: transport, tokenHash: delivery.tokenHash, outcome: result.outcome,
                reason: result.reason, detail: result.detail, status: result.status, milliseconds: milliseconds))
    }
}
