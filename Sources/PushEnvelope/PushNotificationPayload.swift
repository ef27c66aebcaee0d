/// The contract's data payload: what every native device renders, the same on all platforms.
/// Encrypted in the envelope for iOS and the Android relay; sent as FCM data on direct FCM.
public struct PushNotificationPayload: Sendable, Hashable {
    /// The contract version stamped on every message.
    public static let currentContractVersion = "1"

    public var type: PushNotificationType
    public var sessionId: String
    /// The session's display name (the JavaScript hub's: metadata name, summary, path or id).
    public var sessionName: String?
    /// Deep-link path, usually `/sessions/<sessionId>`.
    public var url: String?
    /// The pending-request key: approve/deny for permissions, correlation only for questions.
    public var requestId: String?
    public var title: String
    public var body: String
    public var severity: PushNotificationSeverity?
    public var contractVersion: String
    /// Only on `ready`: the agent's parsed `AGENT_NOTIFY_SUMMARY`, as a JSON string.
    public var notifySummary: String?

    public init(
        type: PushNotificationType, sessionId: String, sessionName: String? = nil, url: String? = nil,
        requestId: String? = nil, title: String, body: String, severity: PushNotificationSeverity? = nil,
        contractVersion: String = PushNotificationPayload.currentContractVersion, notifySummary: String? = nil
    ) {
        self.type = type
        self.sessionId = sessionId
        self.sessionName = sessionName
        self.url = url
        self.requestId = requestId
        self.title = title
        self.body = body
        self.severity = severity
        self.contractVersion = contractVersion
        self.notifySummary = notifySummary
    }

    /// The payload's fields as string pairs; absent optionals are omitted, never null.
    public var fields: [String: String] {
        var fields: [String: String] = [:]
        for (key, value) in members { fields[key] = value }
        return fields
    }

    /// The present fields in the JavaScript hub's insertion order (its direct-FCM `data` order):
    /// `type`, `sessionId`, `sessionName`, `url`, `title`, `body`, `contractVersion`, then
    /// `requestId`, `severity`, `notifySummary`.
    var members: [(String, String)] {
        var members: [(String, String)] = [("type", type.rawValue), ("sessionId", sessionId)]
        if let sessionName { members.append(("sessionName", sessionName)) }
        if let url { members.append(("url", url)) }
        members += [("title", title), ("body", body), ("contractVersion", contractVersion)]
        if let requestId { members.append(("requestId", requestId)) }
        if let severity { members.append(("severity", severity.rawValue)) }
        if let notifySummary { members.append(("notifySummary", notifySummary)) }
        return members
    }

    /// The payload as a JSON object, members in the JavaScript hub's insertion order (see
    /// `members`); its canonical form sorts them.
    public var jsonValue: PushJSONValue {
        .object(members.map { (key: $0.0, value: .string($0.1)) })
    }

    /// Reads a payload as a device does after decrypting: the five required fields must be
    /// strings, optional fields must be strings when present, unknown keys are ignored.
    public init(jsonObject value: PushJSONValue) throws(PushEnvelopeError) {
        guard value.objectValue != nil else { throw PushEnvelopeError.malformedPayload }
        let object = value  // exact, byte-for-byte member lookup
        func required(_ key: String) throws(PushEnvelopeError) -> String {
            guard let text = object[key]?.stringValue else { throw PushEnvelopeError.malformedPayload }
            return text
        }
        func optional(_ key: String) throws(PushEnvelopeError) -> String? {
            guard let member = object[key] else { return nil }
            guard let text = member.stringValue else { throw PushEnvelopeError.malformedPayload }
            return text
        }
        self.init(
            type: PushNotificationType(rawValue: try required("type")),
            sessionId: try required("sessionId"),
            sessionName: try optional("sessionName"),
            url: try optional("url"),
            requestId: try optional("requestId"),
            title: try required("title"),
            body: try required("body"),
            severity: try optional("severity").map(PushNotificationSeverity.init(rawValue:)),
            contractVersion: try required("contractVersion"),
            notifySummary: try optional("notifySummary"))
    }
}

/// A notification type. Open (a struct, not an enum) so a type added by a newer hub still
/// round-trips; devices render unknown types with title and body only.
public struct PushNotificationType: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    /// The agent is ready for input.
    public static let ready = PushNotificationType(rawValue: "ready")
    /// A tool call waits for Allow/Deny.
    public static let permissionRequest = PushNotificationType(rawValue: "permission-request")
    /// The agent asked the user a question.
    public static let inputRequest = PushNotificationType(rawValue: "input-request")
    /// A task finished.
    public static let taskNotification = PushNotificationType(rawValue: "task-notification")

    public static let allKnown: [PushNotificationType] = [.ready, .permissionRequest, .inputRequest, .taskNotification]
}

/// A notification severity, open for the same reason as `PushNotificationType`.
public struct PushNotificationSeverity: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    public static let info = PushNotificationSeverity(rawValue: "info")
    public static let warning = PushNotificationSeverity(rawValue: "warning")
    public static let success = PushNotificationSeverity(rawValue: "success")
    public static let error = PushNotificationSeverity(rawValue: "error")
}
