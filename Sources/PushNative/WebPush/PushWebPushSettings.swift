import PushEnvelope
import PushTransports

/// The Web Push channel's settings: mode (`HAPI_WEB_PUSH`), the VAPID subject
/// (`VAPID_SUBJECT`), whether private endpoints are allowed, and whether settings.json holds a
/// usable VAPID pair. Never holds or shows the private key.
public struct PushWebPushSettings: Sendable, CustomStringConvertible {
    /// `auto` or `off` (anything else is reported and treated as `off`).
    public let mode: String
    /// Whether the channel may send (mode `auto` and a valid subject).
    public let isEnabled: Bool
    /// The `sub` claim: `mailto:` or `https:`.
    public let subject: String
    /// `HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS=1`: endpoints on loopback and private addresses allowed.
    public let allowsPrivateEndpoints: Bool
    /// `present` (a usable pair in settings.json), `absent` (created on first use), or
    /// `unusable` (present but not a valid pair: Web Push is off, the file left as it is).
    public let vapidKeys: String
    /// `HAPI_WEB_PUSH_TOPIC_URGENCY` (default `on`): RFC 8030 `Topic` from the tag and `Urgency`
    /// on every message; `off` sends the JavaScript hub's request, with neither.
    public let sendsTopicAndUrgency: Bool

    public static let defaultSubject = "mailto:admin@hapi.run"

    public var description: String {
        "mode \(mode) → \(isEnabled ? "on" : "off"), subject \(subject), VAPID pair \(vapidKeys)"
            + (allowsPrivateEndpoints ? ", private endpoints allowed" : "") + (sendsTopicAndUrgency ? "" : ", no Topic/Urgency")
    }

    /// The `hapi-push config --json` member.
    public var jsonValue: PushJSONValue {
        .object([
            "mode": .string(mode), "enabled": .bool(isEnabled), "subject": .string(subject),
            "allowPrivateEndpoints": .bool(allowsPrivateEndpoints), "vapidKeys": .string(vapidKeys),
            "topicUrgency": .bool(sendsTopicAndUrgency),
        ])
    }

    static func resolve(
        mode rawMode: String?, allowPrivate: String?, topicUrgency: String? = nil, subject rawSubject: String?, stored: JSONValue?,
        diagnostics: inout [PushConfiguration.Diagnostic]
    ) -> PushWebPushSettings {
        let mode = (rawMode ?? "auto").lowercased()
        var enabled = true
        switch mode {
        case "auto": break
        case "off": enabled = false
        default:
            diagnostics.append(.init(level: .error, setting: "webPushMode", message: "HAPI_WEB_PUSH=\"\(mode)\" is not a mode: use auto or off; Web Push is off"))
            enabled = false
        }
        let subject = HubDataDirectory.nonEmpty(rawSubject) ?? defaultSubject
        if !WebPushVAPID.isValidSubject(subject) {
            diagnostics.append(.init(
                level: .error, setting: "VAPID_SUBJECT",
                message: "VAPID_SUBJECT must be a mailto: address or an https: URL (push services refuse others); Web Push is off"))
            enabled = false
        }
        let allow = ["1", "true", "yes"].contains((allowPrivate ?? "").lowercased())
        var topicAndUrgency = true
        switch (topicUrgency ?? "on").lowercased() {
        case "on", "1", "true", "yes": break
        case "off", "0", "false", "no": topicAndUrgency = false
        default:
            diagnostics.append(.init(
                level: .warning, setting: "webPushTopicUrgency",
                message: "HAPI_WEB_PUSH_TOPIC_URGENCY is not on or off: Topic and Urgency are sent (on)"))
        }
        let keys: String
        switch stored {
        case nil: keys = "absent"
        case let value?:
            if VAPIDKeyFile.keyPair(from: value) != nil {
                keys = "present"
            } else {
                keys = "unusable"
                diagnostics.append(.init(
                    level: .error, setting: "vapidKeys",
                    message: "settings.json \"vapidKeys\" is not a P-256 pair in the web-push package's format: Web Push is off; the file is left untouched"))
                enabled = false
            }
        }
        return PushWebPushSettings(mode: mode, isEnabled: enabled, subject: subject, allowsPrivateEndpoints: allow, vapidKeys: keys,
            sendsTopicAndUrgency: topicAndUrgency)
    }
}
