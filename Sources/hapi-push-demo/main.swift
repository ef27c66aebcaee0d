import Foundation
import PushEnvelope
import PushNative

/// `hapi-push-demo`: the whole flow against loopback stand-ins, as its own executable so the
/// operator's `hapi-push` links neither the loopback server nor the test keys. `make demo` runs
/// it; `hapi-push demo` hands over to it when it is installed next to `hapi-push`.
struct DemoUsageError: Error {}

/// The demo's view of a dispatch: one line per device, then the totals and the Web Push decision.
enum DemoReport {
    static func render(_ report: PushDispatchReport) -> String {
        var lines: [String] = []
        if report.deliveries.isEmpty { lines.append("no native devices registered in this namespace") }
        for delivery in report.deliveries {
            var line = "  " + pad(delivery.platform.rawValue, 6) + pad(SafeText.sanitize(delivery.deviceId, limit: 64), 14) + " token "
                + delivery.tokenHash + "  " + pad(delivery.transport.rawValue, 6) + pad(delivery.outcome.rawValue, 8)
            if let status = delivery.status { line += " HTTP \(status)" }
            if let reason = delivery.reasonText { line += " (\(SafeText.sanitize(reason, limit: 4096)))" }
            if let payload = delivery.payload, payload != .full { line += " payload=\(payload.rawValue)" }
            if delivery.pruned { line += " → pruned" }
            if delivery.outcome != .skipped { line += " \(delivery.latencyMilliseconds) ms" }
            lines.append(line)
        }
        lines.append(
            "sent \(report.count(.sent)), invalid \(report.count(.invalid)), failed \(report.count(.failed)), skipped \(report.count(.skipped)); "
                + (report.suppressWebPush ? "Web Push suppressed (a native device got it)" : "Web Push fires (no native device got it)"))
        return lines.joined(separator: "\n")
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}

let status: Int32
do {
    status = try await DemoCommand.run(Array(CommandLine.arguments.dropFirst()))
} catch is DemoUsageError {
    FileHandle.standardError.write(Data("hapi-push-demo: takes no options\n".utf8))
    status = 2
} catch {
    FileHandle.standardError.write(Data("hapi-push-demo: \(SafeText.sanitize(String(describing: error), limit: 4096))\n".utf8))
    status = 1
}
exit(status)
