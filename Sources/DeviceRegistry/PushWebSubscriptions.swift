import PushEnvelope

/// The framework-neutral face of the JavaScript hub's Web Push routes (`GET
/// /api/push/vapid-public-key`, `POST` and `DELETE /api/push/subscribe`): a hub hands over the
/// authenticated namespace and the raw body and answers with what comes back, as the JS hub
/// does (docs/wire.md). Where we are stricter (endpoint, key shapes) the answer is still the
/// JS hub's `400 {"error":"Invalid body"}`.
public struct PushWebSubscriptions: Sendable {
    public let store: any PushWebSubscriptionStore
    /// The VAPID public key browsers subscribe with (URL-safe base64, 65-byte point).
    public let vapidPublicKey: String
    private let clock: @Sendable () -> Int64

    public init(
        store: any PushWebSubscriptionStore, vapidPublicKey: String,
        now: @escaping @Sendable () -> Int64 = PushDeviceRegistry.systemMilliseconds
    ) {
        self.store = store
        self.vapidPublicKey = vapidPublicKey
        self.clock = now
    }

    static let invalidBody = PushDeviceRegistry.Answer(status: 400, body: #"{"error":"Invalid body"}"#)
    static let unavailable = PushDeviceRegistry.Answer(status: 500, body: #"{"error":"Push subscriptions unavailable"}"#)

    /// `GET /push/vapid-public-key`.
    public var vapidPublicKeyAnswer: PushDeviceRegistry.Answer {
        PushDeviceRegistry.Answer(status: 200, body: JSONValue.object(["publicKey": .string(vapidPublicKey)]).canonicalString)
    }

    /// `POST /push/subscribe` with `{"endpoint","keys":{"p256dh","auth"}}`.
    public func subscribe(namespace: String, body: [UInt8]) async -> PushDeviceRegistry.Answer {
        guard let request = Self.decodeSubscription(body: body) else { return Self.invalidBody }
        do {
            try await store.addWebSubscription(
                namespace: namespace, endpoint: request.endpoint, p256dh: request.p256dh, auth: request.auth, now: clock())
            return .ok
        } catch {
            return Self.unavailable
        }
    }

    /// `DELETE /push/subscribe` with `{"endpoint"}`; ok also when nothing matched.
    public func unsubscribe(namespace: String, body: [UInt8]) async -> PushDeviceRegistry.Answer {
        guard let endpoint = Self.decodeUnsubscription(body: body) else { return Self.invalidBody }
        do {
            try await store.removeWebSubscription(namespace: namespace, endpoint: endpoint)
            return .ok
        } catch {
            return Self.unavailable
        }
    }

    /// A subscribe body that passes the JS hub's schema and our stricter rules.
    package struct Request: Sendable, Equatable {
        package let endpoint: String
        package let p256dh: String
        package let auth: String
    }

    /// The JS schema (each a string of length ≥ 1, unknown keys ignored), then ours: an https
    /// endpoint (`PushWebEndpoint`), `p256dh` a point on P-256, `auth` 16 bytes.
    package static func decodeSubscription(body: [UInt8]) -> Request? {
        let value = RegistrationValidation.parseBody(body)
        guard case .object = value, let endpoint = value["endpoint"]?.stringValue, !endpoint.isEmpty,
            let keys = value["keys"], case .object = keys,
            let p256dh = keys["p256dh"]?.stringValue, !p256dh.isEmpty,
            let auth = keys["auth"]?.stringValue, !auth.isEmpty
        else { return nil }
        guard PushWebEndpoint.parse(endpoint) != nil,
            let point = Base64.urlDecode(p256dh), WebPushP256Key.isValidPublicKey(point),
            Base64.urlDecode(auth)?.count == 16
        else { return nil }
        return Request(endpoint: endpoint, p256dh: p256dh, auth: auth)
    }

    /// The JS schema for DELETE: `endpoint` a string of length ≥ 1 (no stricter rule: removing
    /// what never matched is harmless and answers ok).
    package static func decodeUnsubscription(body: [UInt8]) -> String? {
        let value = RegistrationValidation.parseBody(body)
        guard case .object = value, let endpoint = value["endpoint"]?.stringValue, !endpoint.isEmpty else { return nil }
        return endpoint
    }
}
