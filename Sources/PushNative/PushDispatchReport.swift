public import DeviceRegistry
public import PushEnvelope

/// What one dispatch did, device by device, and whether the hub should skip Web Push.
public struct PushDispatchReport: Sendable, CustomStringConvertible {
    /// One device's fate.
    public struct Delivery: Sendable, Hashable {
        public enum Outcome: String, Sendable, Hashable {
            case sent, invalid, failed
            /// Not attempted: the channel is off, or the device cannot be reached this way.
            case skipped
        }

        public var platform: PushDevicePlatform
        public var deviceId: String
        /// First 12 hex digits of the token's SHA-256.
        public var tokenHash: String
        /// `relay`, `apns`, `fcm`, or `none` when skipped before choosing one.
        public var transport: String
        public var outcome: Outcome
        public var reason: String?
        public var status: Int?
        public var latencyMilliseconds: Int
        /// The registration was removed after an explicit token death.
        public var pruned: Bool
        /// Which rung of the size ladder was sent (nil when nothing was sent).
        public var payload: PushPayloadLevel?
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
                    .object([
                        "platform": .string(delivery.platform.rawValue), "deviceId": .string(delivery.deviceId),
                        "tokenHash": .string(delivery.tokenHash), "transport": .string(delivery.transport),
                        "outcome": .string(delivery.outcome.rawValue), "reason": delivery.reason.map { .string($0) } ?? .null,
                        "status": delivery.status.map { .integer(Int64($0)) } ?? .null,
                        "latencyMs": .integer(Int64(delivery.latencyMilliseconds)), "pruned": .bool(delivery.pruned),
                        "payload": delivery.payload.map { .string($0.rawValue) } ?? .null,
                    ])
                }),
        ])
    }
}
