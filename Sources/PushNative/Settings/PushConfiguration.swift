public import DeviceRegistry
import PushEnvelope
import PushHTTP
public import PushTransports

/// Which transport each platform uses, why, where every setting came from, and every
/// diagnostic. Built once at start-up by `PushConfiguration.load(...)`; credentials are read and
/// checked then, so a broken key is reported before the first push.
///
/// `description` and `jsonValue` show paths and ids, never key contents or tokens.
public struct PushConfiguration: Sendable, CustomStringConvertible {
    /// The Android (phone and Wear) channel.
    public enum AndroidTransport: Sendable {
        /// Direct FCM HTTP v1 with the operator's service account (plaintext data messages).
        case fcm(FCMServiceAccount)
        /// The encrypted relay (phones with a push key; Wear is not reachable this way).
        case relay
        case off

        public var name: String {
            switch self {
            case .fcm: return "fcm"
            case .relay: return "relay"
            case .off: return "off"
            }
        }
    }

    /// The iOS channel.
    public enum IOSTransport: Sendable {
        /// Direct APNs with the operator's provider key.
        case apns(APNsCredentials, environment: APNsEnvironment)
        /// The encrypted relay.
        case relay
        case off

        public var name: String {
            switch self {
            case .apns: return "apns"
            case .relay: return "relay"
            case .off: return "off"
            }
        }
    }

    public enum APNsEnvironment: String, Sendable {
        case production, sandbox

        /// Apple's endpoint for this environment.
        public var endpoint: String {
            switch self {
            case .production: return "https://api.push.apple.com"
            case .sandbox: return "https://api.sandbox.push.apple.com"
            }
        }
    }

    /// A channel's choice: the mode asked for, the transport chosen, and why.
    public struct Channel<Transport: Sendable>: Sendable {
        public let mode: String
        public let transport: Transport
        public let reason: String
    }

    /// A message for the operator about one setting.
    public struct Diagnostic: Sendable, Hashable, CustomStringConvertible {
        public enum Level: String, Sendable, Hashable {
            /// A channel was disabled or a value ignored: push will not work as configured.
            case error
            /// Something surprising that was handled.
            case warning
            /// A choice worth knowing about.
            case info
        }

        public let level: Level
        /// The settings.json key concerned (the environment variable is named in the message).
        public let setting: String
        public let message: String

        public var description: String { "\(level.rawValue): \(setting): \(message)" }
    }

    /// Where registrations live: `PushDeviceStoreFactory` (`name`, `location`, `open()`), the
    /// same type whether or not the build has the PostgreSQL registry.
    public typealias RegistryStore = PushDeviceStoreFactory

    public let android: Channel<AndroidTransport>
    public let ios: Channel<IOSTransport>
    /// The registry `NativePush.start`, the CLI and `hapi-push config` use.
    public let registry: RegistryStore
    /// Web Push to the operator's browsers (the fallback when no native device got it).
    public let webPush: PushWebPushSettings
    /// The relay base URL (both platforms), without a trailing slash.
    public let relayURL: String
    /// The APNs endpoint in use (override, or from the APNs environment).
    public let apnsEndpoint: String
    /// The FCM endpoint in use.
    public let fcmEndpoint: String
    /// An extra CA file to trust besides the system store, when configured and readable.
    public let caFile: String?
    /// Every setting by its settings.json key, with its source.
    public let settings: [String: PushResolvedSetting]
    public let diagnostics: [Diagnostic]
    /// settings.json keys written on this load (first sight of an environment value).
    public let persistedKeys: [String]
    /// `HTTPS_PROXY`, `NO_PROXY` and the other standard proxy variables of the environment
    /// this configuration was loaded from: the hub's HTTP client follows them.
    let proxyEnvironment: [String: String]

    public var description: String {
        var lines = [
            "android: mode \(android.mode) → \(android.transport.name) (\(android.reason))",
            "ios: mode \(ios.mode) → \(ios.transport.name) (\(ios.reason))",
            "registry: \(registry)",
            "webpush: \(webPush)",
        ]
        lines += egress().map { "egress: \($0.endpoint) → \($0.route)" }
        for setting in PushSetting.all {
            guard let resolved = settings[setting.settingsKey] else { continue }
            lines.append("  \(setting.settingsKey) = \(shownValue(setting) ?? "(unset)") [\(resolved.source.rawValue)]")
        }
        lines += diagnostics.map { "  \($0)" }
        return lines.joined(separator: "\n")
    }

    /// A setting's value as it may be printed: the database URL with its password redacted.
    public func shownValue(_ setting: PushSetting) -> String? {
        guard let value = settings[setting.settingsKey]?.value else { return nil }
        if setting == .databaseURL { return DatabaseURLRedaction.redact(value) }
        if setting == .httpsProxy { return HTTPProxy.redact(value) }
        return setting.isURL ? HTTPBaseURL.redactingPassword(value) : value
    }

    /// The proxy setting (`httpsProxy`/`HAPI_PUSH_HTTPS_PROXY`), overriding `HTTPS_PROXY`; nil
    /// when unset, "" for "direct".
    public var httpsProxy: String? { settings[PushSetting.httpsProxy.settingsKey]?.value }
    /// The proxy exceptions (`noProxy`/`HAPI_PUSH_NO_PROXY`), overriding `NO_PROXY`.
    public var noProxy: String? { settings[PushSetting.noProxy.settingsKey]?.value }

    /// The proxy decision every request of a hub on this configuration follows.
    var proxyConfiguration: HTTPProxyConfiguration {
        HTTPProxyConfiguration(httpsProxy: httpsProxy, noProxy: noProxy, environment: proxyEnvironment)
    }

    /// How each endpoint this configuration sends to is reached: `direct (why)` or the proxy
    /// (password `***`) and where it was configured.
    public func egress() -> [(endpoint: String, route: String)] {
        let proxies = proxyConfiguration
        var endpoints: [(String, String)] = []
        let usesRelay = android.transport.name == "relay" || ios.transport.name == "relay"
        if usesRelay, !relayURL.isEmpty { endpoints.append(("relay", relayURL)) }
        if ios.transport.name == "apns", !apnsEndpoint.isEmpty { endpoints.append(("apns", apnsEndpoint)) }
        if android.transport.name == "fcm" {
            endpoints.append(("fcm", fcmEndpoint))
            endpoints.append(("oauth", FCMServiceAccount.defaultTokenURI))
        }
        return endpoints.map { name, url in
            (name, proxies.route(forURL: url)?.description ?? "direct (the URL is unusable)")
        }
    }

    /// The `hapi-push config --json` object.
    public var jsonValue: PushJSONValue {
        var settingsObject: [String: JSONValue] = [:]
        for setting in PushSetting.all {
            guard let resolved = settings[setting.settingsKey] else { continue }
            settingsObject[setting.settingsKey] = .object([
                "value": shownValue(setting).map { .string($0) } ?? .null, "source": .string(resolved.source.rawValue),
            ])
        }
        return .object([
            "android": .object([
                "mode": .string(android.mode), "transport": .string(android.transport.name), "reason": .string(android.reason),
            ]),
            "ios": .object(["mode": .string(ios.mode), "transport": .string(ios.transport.name), "reason": .string(ios.reason)]),
            "registry": .object(["store": .string(registry.name), "location": .string(registry.location)]),
            "webPush": webPush.jsonValue,
            "egress": .object(Dictionary(egress().map { ($0.endpoint, JSONValue.string($0.route)) }, uniquingKeysWith: { first, _ in first })),
            "settings": .object(settingsObject),
            "diagnostics": .array(
                diagnostics.map {
                    .object(["level": .string($0.level.rawValue), "setting": .string($0.setting), "message": .string($0.message)])
                }),
        ])
    }
}

extension PushConfiguration: CustomReflectable {
    /// What `dump()`, debuggers and reflection-based loggers see: the printable values only, so
    /// the proxy's password (in a setting and in the captured environment) appears as `***`.
    public var customMirror: Mirror {
        var shownSettings: [String: String] = [:]
        for setting in PushSetting.all {
            guard let resolved = settings[setting.settingsKey] else { continue }
            shownSettings[setting.settingsKey] = "\(shownValue(setting) ?? "(unset)") [\(resolved.source.rawValue)]"
        }
        return Mirror(
            self,
            children: [
                "android": android, "ios": ios, "registry": registry, "relayURL": relayURL, "apnsEndpoint": apnsEndpoint,
                "fcmEndpoint": fcmEndpoint, "caFile": caFile as Any, "settings": shownSettings, "diagnostics": diagnostics,
                "persistedKeys": persistedKeys, "egress": egress().map { "\($0.endpoint) → \($0.route)" },
            ], displayStyle: .struct)
    }
}
