public import PushEnvelope

/// The JavaScript hub's notifications, composed from the same inputs (js-hub-behaviour.md §1,
/// §2, §6.1): the session as the hub stores it (`PushSession`), the contents of its last
/// messages, a `message-received` content. The payload always carries `sessionName`, `url` and
/// `severity`, as the JavaScript hub's does.
///
/// Where the seed contract is newer it wins: a question tool's request becomes an
/// `input-request` with the contract's wording (`pendingRequest(for:)`), not a permission
/// request that shows its raw arguments.
extension PushNotificationComposer {
    /// The agent finished its turn (R1.3): the newest agent text among the last 20 messages, with
    /// its `AGENT_NOTIFY_SUMMARY` footer when it has one with a summary (title `<agent> - <name>`,
    /// body the summary and `-> action`); else that text, cut to 280 UTF-16 units; else
    /// `Ready for input` / `<agent> is waiting in <name>`.
    ///
    /// - Parameter messages: the session's stored message contents (each row's `content`), oldest first.
    public static func ready(for session: PushSession, messages: [PushJSONValue]) -> PushNotificationPayload {
        let agent = session.agentName
        let name = session.displayName
        var title = "Ready for input"
        var body = "\(agent) is waiting in \(name)"
        var notifySummary: String?
        if let lastText = HubMessageContent.lastAgentText(in: messages) {
            title = "\(agent) - \(name)"
            if let footer = AgentNotifySummary.extract(from: lastText), let summary = footer.summary, !summary.isEmpty {
                let summaryLine = HubText.readyTruncate(summary, limit: 280)
                var lines = [summaryLine]
                // The action line, only when it says something other than the summary (exact,
                // untrimmed comparison), within what is left of 280 units.
                if let action = footer.action, !action.isEmpty, !HubText.same(action, summary) {
                    lines.append(HubText.readyTruncate("-> " + action, limit: max(0, 280 - HubText.length(summaryLine) - 1)))
                }
                body = lines.filter { !$0.isEmpty }.joined(separator: "\n")
                notifySummary = footer.serialized
            } else {
                body = HubText.readyTruncate(lastText, limit: 280)  // a footer without a summary stays in the text
            }
        }
        return PushNotificationPayload(
            type: .ready, sessionId: session.id, sessionName: name, url: session.url, title: title, body: body, severity: .info,
            notifySummary: notifySummary)
    }

    /// What the hub sends when its permission debounce fires (R1.4, §1.6, §4.2): nothing when no
    /// request is pending (a deliberate difference: the JavaScript hub then sends an empty
    /// "Permission Request"); an `input-request` when the first pending request is a question
    /// tool; else the JavaScript hub's `permission-request`.
    public static func pendingRequest(for session: PushSession) -> PushNotificationPayload? {
        guard let first = session.pendingRequests.first else { return nil }
        if isQuestionRequest(first) {
            let name = session.displayName
            return PushNotificationPayload(
                type: .inputRequest, sessionId: session.id, sessionName: name, url: session.url, requestId: first.id.isEmpty ? nil : first.id,
                title: "\(session.agentName) needs your input", body: questionBody(arguments: first.request["arguments"], sessionName: name),
                severity: .info)
        }
        return permissionRequest(for: session)
    }

    /// The JavaScript hub's `permission-request` for the first pending request (R1.4–R1.6):
    /// title `Permission Request`; body a glance line (`<agent> <tool>: <argument>`), a
    /// `Session: <name>` line when it adds something, and the tool's detail line. With no
    /// request pending, the empty notification the JavaScript hub sends (no `requestId`).
    public static func permissionRequest(for session: PushSession) -> PushNotificationPayload {
        let agent = session.agentName
        let name = session.displayName
        let first = session.pendingRequests.first
        let tool = first?.request["tool"]?.stringValue ?? ""
        let arguments = first?.request["arguments"]
        let glance: String
        if tool.isEmpty {
            glance = "\(agent) - \(name)"
        } else {
            let compact = ToolRequestPreview.compact(tool: tool, arguments: arguments)
            glance = compact.isEmpty ? "\(agent) \(tool)" : "\(agent) \(tool): \(compact)"
        }
        var lines = [glance]
        if !name.isEmpty, !HubText.same(name, glance) { lines.append("Session: \(name)") }
        let detail = first == nil ? "" : ToolRequestPreview.detailed(tool: tool, arguments: arguments)
        if !detail.isEmpty { lines.append(detail) }
        let requestId = first.flatMap { $0.id.isEmpty ? nil : $0.id }  // only a truthy id is sent
        return PushNotificationPayload(
            type: .permissionRequest, sessionId: session.id, sessionName: name, url: session.url, requestId: requestId,
            title: "Permission Request", body: lines.joined(separator: "\n"), severity: .warning)
    }

    /// A task notification carried by a `message-received` content (R1.7, R1.8), or nil when
    /// the content holds none: `Task failed` (error) for a failed, error, killed or aborted
    /// status, else `Task completed` (success); body `<agent> · <name> · <summary>`.
    public static func taskNotification(for session: PushSession, content: PushJSONValue) -> PushNotificationPayload? {
        guard let task = HubMessageContent.taskNotification(in: content) else { return nil }
        let failed = isFailedTaskStatus(task.status)
        let name = session.displayName
        return PushNotificationPayload(
            type: .taskNotification, sessionId: session.id, sessionName: name, url: session.url, title: failed ? "Task failed" : "Task completed",
            body: "\(session.agentName) · \(name) · \(HubText.readyTruncate(task.summary, limit: 280))", severity: failed ? .error : .success)
    }

    /// Whether a `message-received` content is a ready event (§4.1), which schedules a ready push.
    public static func isReadyEvent(_ content: PushJSONValue) -> Bool {
        HubMessageContent.isReadyEvent(content)
    }
}
