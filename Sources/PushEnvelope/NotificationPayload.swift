/// The contract's data payload: what every native device renders, the same on all platforms.
/// Encrypted in the envelope for iOS and the Android relay; sent as FCM data on direct FCM.
public struct NotificationPayload: Sendable, Hashable {
    /// The contract version stamped on every message.
    public static let currentContractVersion = "1"

    public var type: NotificationType
    public var sessionId: String
    /// Display name, `agent - project`.
    public var sessionName: String?
    /// Deep-link path, usually `/sessions/<sessionId>`.
    public var url: String?
    /// The pending-request key: approve/deny for permissions, correlation only for questions.
    public var requestId: String?
    public var title: String
    public var body: String
    public var severity: Severity?
    public var contractVersion: String
    /// Only on `ready`: the agent's parsed `AGENT_NOTIFY_SUMMARY`, as a JSON string.
    public var notifySummary: String?

    public init(
        type: NotificationType, sessionId: String, sessionName: String? = nil, url: String? = nil,
        requestId: String? = nil, title: String, body: String, severity: Severity? = nil,
        contractVersion: String = NotificationPayload.currentContractVersion, notifySummary: String? = nil
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
    /// This is also the direct-FCM `data` map, where every value must be a string.
    public var fields: [String: String] {
        var fields: [String: String] = [
            "type": type.rawValue,
            "sessionId": sessionId,
            "title": title,
            "body": body,
            "contractVersion": contractVersion,
        ]
        if let sessionName { fields["sessionName"] = sessionName }
        if let url { fields["url"] = url }
        if let requestId { fields["requestId"] = requestId }
        if let severity { fields["severity"] = severity.rawValue }
        if let notifySummary { fields["notifySummary"] = notifySummary }
        return fields
    }

    /// The payload as a JSON object.
    public var jsonValue: JSONValue {
        .object(fields.mapValues { .string($0) })
    }

    /// Reads a payload as a device does after decrypting: the five required fields must be
    /// strings, optional fields must be strings when present, unknown keys are ignored.
    public init(jsonObject value: JSONValue) throws(EnvelopeError) {
        guard value.objectValue != nil else { throw EnvelopeError.malformedPayload }
        let object = value  // exact, byte-for-byte member lookup
        func required(_ key: String) throws(EnvelopeError) -> String {
            guard let text = object[key]?.stringValue else { throw EnvelopeError.malformedPayload }
            return text
        }
        func optional(_ key: String) throws(EnvelopeError) -> String? {
            guard let member = object[key] else { return nil }
            guard let text = member.stringValue else { throw EnvelopeError.malformedPayload }
            return text
        }
        self.init(
            type: NotificationType(rawValue: try required("type")),
            sessionId: try required("sessionId"),
            sessionName: try optional("sessionName"),
            url: try optional("url"),
            requestId: try optional("requestId"),
            title: try required("title"),
            body: try required("body"),
            severity: try optional("severity").map(Severity.init(rawValue:)),
            contractVersion: try required("contractVersion"),
            notifySummary: try optional("notifySummary"))
    }
}

/// A notification type. Open (a struct, not an enum) so a type added by a newer hub still
/// round-trips; devices render unknown types with title and body only.
public struct NotificationType: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    /// The agent is ready for input.
    public static let ready = NotificationType(rawValue: "ready")
    /// A tool call waits for Allow/Deny.
    public static let permissionRequest = NotificationType(rawValue: "permission-request")
    /// The agent asked the user a question.
    public static let inputRequest = NotificationType(rawValue: "input-request")
    /// A task finished.
    public static let taskNotification = NotificationType(rawValue: "task-notification")

    public static let allKnown: [NotificationType] = [.ready, .permissionRequest, .inputRequest, .taskNotification]
}

/// A notification severity, open for the same reason as `NotificationType`.
public struct Severity: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    public static let info = Severity(rawValue: "info")
    public static let warning = Severity(rawValue: "warning")
    public static let success = Severity(rawValue: "success")
    public static let error = Severity(rawValue: "error")
}
