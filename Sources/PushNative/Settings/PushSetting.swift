/// One push setting: its environment variable, its `settings.json` key and its default.
/// The table below is the whole configuration surface; docs/configuration.md mirrors it.
package struct PushSetting: Sendable, Hashable, CustomStringConvertible {
    package let environmentVariable: String
    package let settingsKey: String
    package let defaultValue: String?
    /// Path values may start with `~`, expanded to `$HOME`.
    package let isPath: Bool

    package var description: String { "\(environmentVariable) (settings.json \"\(settingsKey)\")" }

    package static let androidPushMode = PushSetting(
        environmentVariable: "HAPI_ANDROID_PUSH", settingsKey: "androidPushMode", defaultValue: "auto", isPath: false)
    package static let fcmServiceAccountPath = PushSetting(
        environmentVariable: "FCM_SERVICE_ACCOUNT_PATH", settingsKey: "fcmServiceAccountPath", defaultValue: nil, isPath: true)
    package static let iosPushMode = PushSetting(
        environmentVariable: "HAPI_IOS_PUSH", settingsKey: "iosPushMode", defaultValue: "relay", isPath: false)
    package static let relayURL = PushSetting(
        environmentVariable: "HAPI_PUSH_RELAY_URL", settingsKey: "iosPushRelayUrl", defaultValue: "https://push.hapi.run", isPath: false)
    package static let apnsKeyPath = PushSetting(
        environmentVariable: "APNS_KEY_P8_PATH", settingsKey: "apnsKeyP8Path", defaultValue: nil, isPath: true)
    package static let apnsKeyId = PushSetting(environmentVariable: "APNS_KEY_ID", settingsKey: "apnsKeyId", defaultValue: nil, isPath: false)
    package static let apnsTeamId = PushSetting(environmentVariable: "APNS_TEAM_ID", settingsKey: "apnsTeamId", defaultValue: nil, isPath: false)
    package static let apnsBundleId = PushSetting(
        environmentVariable: "APNS_BUNDLE_ID", settingsKey: "apnsBundleId", defaultValue: nil, isPath: false)
    package static let apnsEnvironment = PushSetting(
        environmentVariable: "APNS_ENV", settingsKey: "apnsEnv", defaultValue: "production", isPath: false)
    package static let apnsEndpoint = PushSetting(
        environmentVariable: "HAPI_APNS_ENDPOINT", settingsKey: "apnsEndpoint", defaultValue: nil, isPath: false)
    package static let fcmEndpoint = PushSetting(
        environmentVariable: "HAPI_FCM_ENDPOINT", settingsKey: "fcmEndpoint", defaultValue: "https://fcm.googleapis.com", isPath: false)
    package static let caFile = PushSetting(environmentVariable: "HAPI_PUSH_CA_FILE", settingsKey: "pushCaFile", defaultValue: nil, isPath: true)
    /// The registry on PostgreSQL (`postgres://…`); unset, SQLite in the data directory. May
    /// hold a password: shown redacted, and saved to settings.json on first sight only without one.
    package static let databaseURL = PushSetting(
        environmentVariable: "HAPI_PUSH_DATABASE_URL", settingsKey: "pushDatabaseUrl", defaultValue: nil, isPath: false)

    /// The egress proxy for every https request (APNs, FCM, Google's OAuth, the relay):
    /// overrides `HTTPS_PROXY`/`https_proxy`/`ALL_PROXY`; empty means "direct". May hold a
    /// password: shown as `***`, never saved to settings.json from the environment.
    package static let httpsProxy = PushSetting(
        environmentVariable: "HAPI_PUSH_HTTPS_PROXY", settingsKey: "httpsProxy", defaultValue: nil, isPath: false)
    /// Hosts that bypass the proxy, as `NO_PROXY` (which it overrides).
    package static let noProxy = PushSetting(environmentVariable: "HAPI_PUSH_NO_PROXY", settingsKey: "noProxy", defaultValue: nil, isPath: false)
    /// Web Push to the operator's browsers when no native device got a notification: `auto`
    /// (default) or `off`.
    package static let webPushMode = PushSetting(
        environmentVariable: "HAPI_WEB_PUSH", settingsKey: "webPushMode", defaultValue: "auto", isPath: false)
    /// `1` lets Web Push POST to endpoints on loopback or private addresses (tests, private
    /// push services); refused otherwise (server-side request forgery).
    package static let webPushAllowPrivateEndpoints = PushSetting(
        environmentVariable: "HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS", settingsKey: "webPushAllowPrivateEndpoints", defaultValue: nil,
        isPath: false)
    /// RFC 8030 `Topic` (from the notification's tag) and `Urgency` (`high` for permission and
    /// input requests) on every Web Push message: `on` (default) or `off` (the JavaScript hub's
    /// request, which has neither).
    package static let webPushTopicUrgency = PushSetting(
        environmentVariable: "HAPI_WEB_PUSH_TOPIC_URGENCY", settingsKey: "webPushTopicUrgency", defaultValue: "on", isPath: false)

    /// A base URL (the relay, an endpoint override): validated, shown with any password as `***`.
    package var isURL: Bool { self == .relayURL || self == .apnsEndpoint || self == .fcmEndpoint }

    /// Every setting, in the order documented and printed.
    package static let all: [PushSetting] = [
        .androidPushMode, .fcmServiceAccountPath, .iosPushMode, .relayURL, .apnsKeyPath, .apnsKeyId, .apnsTeamId, .apnsBundleId,
        .apnsEnvironment, .apnsEndpoint, .fcmEndpoint, .caFile, .databaseURL, .httpsProxy, .noProxy, .webPushMode,
        .webPushAllowPrivateEndpoints, .webPushTopicUrgency,
    ]
}

/// Where a resolved value came from.
package enum PushSettingSource: String, Sendable, Hashable {
    case environment = "env"
    case file
    case `default`
}

/// A setting's value after precedence (environment > settings.json > default).
package struct PushResolvedSetting: Sendable, Hashable {
    /// The value (trimmed, `~` expanded for paths); nil when unset with no default.
    package let value: String?
    package let source: PushSettingSource
}
