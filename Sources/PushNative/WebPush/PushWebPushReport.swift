public import PushEnvelope
public import PushProviders

/// What Web Push did for one notification, and why it was or was not used.
public struct PushWebPushReport: Sendable, Hashable {
    /// Why Web Push was or was not used.
    public struct Decision: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A native device got the notification: one OS notification, not two.
        public static let nativeSent = Decision(rawValue: "native_sent")
        /// The hub says a web client of the namespace is visible: it toasts instead.
        public static let webClientVisible = Decision(rawValue: "web_client_visible")
        /// The namespace has no Web Push subscription.
        public static let noSubscriptions = Decision(rawValue: "no_subscriptions")
        /// Sent to every subscription of the namespace (each delivery says how it went).
        public static let sent = Decision(rawValue: "sent")
        /// Web Push is off (`HAPI_WEB_PUSH=off`, no usable VAPID pair or subject, a store
        /// without subscriptions), or the notification has no Web Push payload.
        public static let disabled = Decision(rawValue: "disabled")
    }

    /// One subscription's fate.
    public struct Delivery: Sendable, Hashable {
        /// `https://host[:port]` of the endpoint (the capability is in its path: never shown).
        public var origin: String
        /// First 12 hex digits of the endpoint's SHA-256.
        public var fingerprint: String
        public var outcome: PushDeliveryOutcome
        public var reason: PushDeliveryReason?
        public var detail: String?
        public var status: Int?
        /// The subscription was removed (404/410 from its push service).
        public var removed: Bool
        /// After a VAPID key rotation: the previous public key this answer was for, when the
        /// current one was refused (401/403) and a kept one was tried; nil for the current key.
        public var previousVAPIDPublicKey: String? = nil
        /// Set when the push service said the subscription is gone but the store could not
        /// remove it: why, sanitized (`--json` `pruneError`, as for a native delivery).
        public var pruneFailure: String? = nil

        /// `origin` and fingerprint, as reports print an endpoint.
        public var endpoint: String { "\(origin) \(fingerprint)" }
    }

    public var decision: Decision
    public var deliveries: [Delivery]

    public init(decision: Decision, deliveries: [Delivery] = []) {
        self.decision = decision
        self.deliveries = deliveries
    }

    /// The `"webPush"` member of `hapi-push send --json`.
    public var jsonValue: PushJSONValue {
        .object([
            (key: "decision", value: .string(decision.rawValue)),
            (
                key: "deliveries",
                value: .array(
                    deliveries.map { delivery in
                        var members: [(key: String, value: PushJSONValue)] = [
                            (key: "endpoint", value: .string(delivery.endpoint)), (key: "outcome", value: .string(delivery.outcome.rawValue)),
                            (key: "reason", value: delivery.reason.map { .string($0.text(detail: delivery.detail)) } ?? .null),
                            (key: "status", value: delivery.status.map { .integer(Int64($0)) } ?? .null),
                            (key: "previousVapidPublicKey", value: delivery.previousVAPIDPublicKey.map { .string($0) } ?? .null),
                        ]
                        if let failure = delivery.pruneFailure { members.append((key: "pruneError", value: .string(failure))) }
                        return .object(members)
                    })
            ),
        ])
    }
}

/// One notification sent the JavaScript hub's way: the native report, then Web Push's.
public struct PushNotificationReport: Sendable {
    public var native: PushDispatchReport
    public var webPush: PushWebPushReport
}
