public import DeviceRegistry
public import PushEnvelope
public import PushProviders
import PushTransports

/// What one dispatch did, device by device, and whether the hub should skip Web Push.
public struct PushDispatchReport: Sendable, CustomStringConvertible {
    /// One device's fate.
    public struct Delivery: Sendable, Hashable {
        /// `sent`, `invalid`, `failed`, or `skipped` (not attempted: the channel is off, or the
        /// device cannot be reached this way): the one outcome enum, from the wire to here.
        public typealias Outcome = PushDeliveryOutcome

        public var platform: PushDevicePlatform
        public var deviceId: String
        /// First 12 hex digits of the token's SHA-256.
        public var tokenHash: String
        /// `relay`, `apns`, `fcm`, or `none` when skipped before choosing one.
        public var transport: PushTransportName
        public var outcome: Outcome
        /// Why, when there is something to say: ours (`.missingPushKey`, `.timeout`, …) or the
        /// provider's own (`BadCollapseId`), never a secret.
        public var reason: PushDeliveryReason?
        /// What the reason's name does not say (a provider's message, the OAuth error), sanitized.
        public var detail: String? = nil
        public var status: Int?
        public var latencyMilliseconds: Int
        /// The registration was removed after an explicit token death.
        public var pruned: Bool
        /// The token is dead but its registration could not be removed (the store failed):
        /// why, sanitized. Nil when pruning succeeded or was not needed.
        public var pruneFailure: String? = nil
        /// Which rung of the size ladder was sent (nil when nothing was sent).
        public var payload: PushPayloadLevel?

        /// The reason with its detail, as `hapi-push send --json` prints it
        /// (`NOT_FOUND: Requested entity was not found.`).
        public var reasonText: String? { reason.map { $0.text(detail: detail) } }

        /// What a transport's result comes to for this device: the provider's answer as the
        /// transport's policy read it, with the latency it took.
        mutating func record(_ result: PushResult) {
            outcome = result.outcome
            reason = result.reason
            detail = result.detail
            status = result.status
            latencyMilliseconds = result.latency.reportedMilliseconds
        }
    }

    public var deliveries: [Delivery]

    /// True when at least one device accepted the notification: the hub suppresses Web Push
    /// for this event and namespace. No devices, only skips or only failures → false.
    public var suppressWebPush: Bool { deliveries.contains { $0.outcome == .sent } }

    public func count(_ outcome: Delivery.Outcome) -> Int { deliveries.filter { $0.outcome == outcome }.count }

    public var description: String {
        "PushDispatchReport(devices: \(deliveries.count), sent: \(count(.sent)), invalid: \(count(.invalid)), failed: \(count(.failed)), skipped: \(count(.skipped)), suppressWebPush: \(suppressWebPush))"
    }

    /// The `hapi-push send --json` object.
    public var jsonValue: PushJSONValue {
        .object([
            "suppressWebPush": .bool(suppressWebPush),
            "totals": .object([
                "devices": .integer(Int64(deliveries.count)), "sent": .integer(Int64(count(.sent))),
                "invalid": .integer(Int64(count(.invalid))), "failed": .integer(Int64(count(.failed))),
                "skipped": .integer(Int64(count(.skipped))),
            ]),
            "deliveries": .array(
                deliveries.map { delivery in
                    var members: [(key: String, value: PushJSONValue)] = [
                        ("platform", .string(delivery.platform.rawValue)), ("deviceId", .string(delivery.deviceId)),
                        ("tokenHash", .string(delivery.tokenHash)), ("transport", .string(delivery.transport.rawValue)),
                        ("outcome", .string(delivery.outcome.rawValue)), ("reason", delivery.reasonText.map { .string($0) } ?? .null),
                        ("status", delivery.status.map { .integer(Int64($0)) } ?? .null),
                        ("latencyMs", .integer(Int64(delivery.latencyMilliseconds))), ("pruned", .bool(delivery.pruned)),
                        ("payload", delivery.payload.map { .string($0.rawValue) } ?? .null),
                    ]
                    // Added, never renamed: present only when a dead token could not be removed.
                    if let failure = delivery.pruneFailure { members.append((key: "pruneError", value: .string(failure))) }
                    return .object(members)
                }),
        ])
    }
}
