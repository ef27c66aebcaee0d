public import PushEnvelope

/// What the JavaScript hub sends a browser by Web Push (web-push.md §3): `{title, body, tag?,
/// data: {type, sessionId, url, requestId?}}`, serialized in that order as `JSON.stringify`
/// writes it (not canonical), absent members left out.
public struct PushWebPayload: Sendable, Hashable {
    public var title: String
    public var body: String
    /// Replaces an earlier notification with the same tag; none for task notifications.
    public var tag: String?
    /// `data.type`: `ready`, `permission-request`, `input-request`, `task-notification`.
    public var type: String
    public var sessionId: String?
    public var url: String?
    public var requestId: String?

    public init(title: String, body: String, tag: String?, type: String, sessionId: String?, url: String?, requestId: String? = nil) {
        self.title = title
        self.body = body
        self.tag = tag
        self.type = type
        self.sessionId = sessionId
        self.url = url
        self.requestId = requestId
    }

    /// The JSON value in the JavaScript hub's key order.
    public var jsonValue: PushJSONValue {
        var data: [(key: String, value: PushJSONValue)] = [(key: "type", value: .string(type))]
        if let sessionId { data.append((key: "sessionId", value: .string(sessionId))) }
        if let url { data.append((key: "url", value: .string(url))) }
        if let requestId { data.append((key: "requestId", value: .string(requestId))) }
        var members: [(key: String, value: PushJSONValue)] = [(key: "title", value: .string(title)), (key: "body", value: .string(body))]
        if let tag { members.append((key: "tag", value: .string(tag))) }
        members.append((key: "data", value: .object(data)))
        return .object(members)
    }

    /// The bytes sealed for the browser: `JSON.stringify` of `jsonValue`.
    public var json: String { jsonValue.javaScriptString }
}
