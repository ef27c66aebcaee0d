import PushEnvelope
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

    public let android: Channel<AndroidTransport>
    public let ios: Channel<IOSTransport>
    /// The relay base URL (both platforms), without a trailing slash.
    public let relayURL: String
    /// The APNs endpoint in use (override, or from the APNs environment).
    public let apnsEndpoint: String
    /// The FCM endpoint in use.
    public let fcmEndpoint: String
    /// An extra CA file to trust besides the system store, when configured and readable.
    public let caFile: String?
    /// Every setting by its settings.json key, with its source.
    public let settings: [String: ResolvedSetting]
    public let diagnostics: [Diagnostic]
    /// settings.json keys written on this load (first sight of an environment value).
    public let persistedKeys: [String]

    public var description: String {
        var lines = [
            "android: mode \(android.mode) → \(android.transport.name) (\(android.reason))",
            "ios: mode \(ios.mode) → \(ios.transport.name) (\(ios.reason))",
        ]
        for setting in PushSetting.all {
            guard let resolved = settings[setting.settingsKey] else { continue }
            lines.append("  \(setting.settingsKey) = \(resolved.value ?? "(unset)") [\(resolved.source.rawValue)]")
        }
        lines += diagnostics.map { "  \($0)" }
        return lines.joined(separator: "\n")
    }

    /// The `hapi-push config --json` object.
    public var jsonValue: JSONValue {
        var settingsObject: [String: JSONValue] = [:]
        for (key, resolved) in settings {
            settingsObject[key] = .object(["value": resolved.value.map { .string($0) } ?? .null, "source": .string(resolved.source.rawValue)])
        }
        return .object([
            "android": .object([
                "mode": .string(android.mode), "transport": .string(android.transport.name), "reason": .string(android.reason),
            ]),
            "ios": .object(["mode": .string(ios.mode), "transport": .string(ios.transport.name), "reason": .string(ios.reason)]),
            "settings": .object(settingsObject),
            "diagnostics": .array(
                diagnostics.map {
                    .object(["level": .string($0.level.rawValue), "setting": .string($0.setting), "message": .string($0.message)])
                }),
        ])
    }
}
