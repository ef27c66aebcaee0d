public import PushEnvelope

/// The JavaScript hub's Web Push payloads (web-push.md §3), from the same `PushSession` inputs
/// as the native ones: shorter than the native bodies (a browser notification shows little),
/// tagged per session so a newer one replaces the last.
extension PushNotificationComposer {
    /// `Ready for input` / `<agent> is waiting in <name>`, tag `ready-<id>`.
    public static func webReady(for session: PushSession) -> PushWebPayload {
        PushWebPayload(
            title: "Ready for input", body: "\(session.agentName) is waiting in \(session.displayName)", tag: "ready-\(session.id)",
            type: "ready", sessionId: session.id, url: session.url)
    }

    /// The permission debounce's Web Push: `Permission Request` / `<name> (<tool>)`, tag
    /// `permission-<id>`, `requestId` the first pending request's key (`""` included). When that request is a
    /// question tool, the seed contract's input-request instead (the JavaScript hub has none on
    /// the web): the native input-request's title and body, tag `input-request-<id>`.
    public static func webPendingRequest(for session: PushSession) -> PushWebPayload {
        let first = session.pendingRequests.first
        // The key as it is, even `""` (the JavaScript hub's Web Push keeps it; only the native
        // payloads drop a falsy one); absent only when no request is pending.
        let requestId = first?.id
        if let first, isQuestionRequest(first) {
            let name = session.displayName
            return PushWebPayload(
                title: "\(session.agentName) needs your input", body: questionBody(arguments: first.request["arguments"], sessionName: name),
                tag: "input-request-\(session.id)", type: "input-request", sessionId: session.id, url: session.url, requestId: requestId)
        }
        var body = session.displayName
        if let tool = first?.request["tool"], isTruthy(tool) { body += " (\(HubText.javaScriptString(tool)))" }
        return PushWebPayload(
            title: "Permission Request", body: body, tag: "permission-\(session.id)", type: "permission-request", sessionId: session.id,
            url: session.url, requestId: requestId)
    }

    /// A task notification carried by a `message-received` content, or nil: `Task failed` or
    /// `Task completed`, `<agent> · <name> · <summary>`, no tag.
    public static func webTaskNotification(for session: PushSession, content: PushJSONValue) -> PushWebPayload? {
        guard let task = HubMessageContent.taskNotification(in: content) else { return nil }
        let failed = isFailedTaskStatus(task.status)
        return PushWebPayload(
            title: failed ? "Task failed" : "Task completed", body: "\(session.agentName) · \(session.displayName) · \(task.summary)", tag: nil,
            type: "task-notification", sessionId: session.id, url: session.url)
    }

    /// JavaScript truthiness of a JSON value.
    static func isTruthy(_ value: PushJSONValue) -> Bool {
        switch value {
        case .null, .bool(false), .integer(0), .string(""): return false
        case .double(let d): return d != 0 && !d.isNaN
        default: return true
        }
    }
}
