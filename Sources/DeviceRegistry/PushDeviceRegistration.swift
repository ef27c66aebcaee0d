public import PushEnvelope

/// One registered install: what the dispatcher needs to reach it.
///
/// `description` shows a token fingerprint and whether a key is present, never the token or
/// the key, so a registration can be logged safely.
public struct PushDeviceRegistration: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    public var namespace: String
    public var deviceId: String
    public var platform: PushDevicePlatform
    /// The APNs device token (lowercase hex) or the opaque FCM token. A secret: log `tokenHash`.
    public var token: String
    /// The device's envelope key; nil for wear and for phones that registered without one.
    public var pushKey: PushKey?
    /// Milliseconds since 1970, as the JavaScript hub stores them.
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(
        namespace: String, deviceId: String, platform: PushDevicePlatform, token: String, pushKey: PushKey?, createdAt: Int64,
        updatedAt: Int64
    ) {
        self.namespace = namespace
        self.deviceId = deviceId
        self.platform = platform
        self.token = token
        self.pushKey = pushKey
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The first 12 hex digits of the token's SHA-256: safe to log and print.
    public var tokenHash: String { TokenFingerprint.of(token) }

    public var description: String {
        "PushDeviceRegistration(namespace: \(namespace), deviceId: \(deviceId), platform: \(platform), token: \(tokenHash)…, pushKey: \(pushKey == nil ? "none" : "present"), updatedAt: \(updatedAt))"
    }

    /// `dump()` and debuggers see the fingerprint, not the token.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "namespace": namespace, "deviceId": deviceId, "platform": platform, "tokenHash": tokenHash,
                "hasPushKey": pushKey != nil, "createdAt": createdAt, "updatedAt": updatedAt,
            ], displayStyle: .struct)
    }
}
