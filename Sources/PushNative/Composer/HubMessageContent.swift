import PushEnvelope

/// What the JavaScript hub reads out of stored message contents and `message-received` events:
/// an agent's plain text (R1.3), a task notification (R1.7), a ready event (§4.1).
enum HubMessageContent {
    // MARK: - Agent text (R1.3)

    /// The newest agent text that is not blank among the last 20 messages (oldest first).
    static func lastAgentText(in messages: [JSONValue]) -> String? {
        for content in messages.suffix(20).reversed() {
            guard let record = roleRecord(content), record["role"] == "agent", let text = plainText(record["content"]) else { continue }
            if !HubText.isBlank(text) { return text }
        }
        return nil
    }

    /// The content itself, or what sits under `.message`, `.data.message` or `.payload.message`:
    /// the first object with a string `role` and a `content` key.
    static func roleRecord(_ content: JSONValue) -> JSONValue? {
        for candidate in [content, content["message"], content["data"]?["message"], content["payload"]?["message"]] {
            if let candidate, candidate["role"]?.stringValue != nil, candidate["content"] != nil { return candidate }
        }
        return nil
    }

    /// Codex messages, Antigravity messages, and the text blocks of an assistant output; no
    /// text for tool calls, tool results, reasoning or events.
    static func plainText(_ content: JSONValue?) -> String? {
        guard let content, let data = content["data"] else { return nil }
        if content["type"] == "codex", data["type"] == "message", case .string(let message)? = data["message"], !message.isEmpty {
            return message
        }
        guard content["type"] == "output" else { return nil }
        if data["type"] == "agy_message", case .string(let text)? = data["content"], !HubText.isBlank(text) {
            return text
        }
        if data["type"] == "assistant", let blocks = data["message"]?["content"]?.arrayValue {
            let texts = blocks.compactMap { block -> String? in
                guard block["type"] == "text", case .string(let text)? = block["text"] else { return nil }
                return text
            }
            return texts.isEmpty ? nil : texts.joined(separator: "\n")
        }
        return nil
    }

    // MARK: - Task notifications (R1.7)

    struct TaskNotification: Equatable {
        /// Trimmed and not empty, in both forms (as `extractTaskNotification` does).
        var summary: String
        /// Trimmed; `""` when it was blank (system form); nil when absent or not a string.
        var status: String?
    }

    /// The inner `content.content` (when it is an object) first, then the content itself.
    static func taskNotification(in content: JSONValue) -> TaskNotification? {
        var candidates: [JSONValue] = []
        if let inner = content["content"], inner.objectValue != nil { candidates.append(inner) }
        candidates.append(content)
        for candidate in candidates {
            if let task = systemTask(candidate) ?? userTask(candidate) { return task }
        }
        return nil
    }

    /// `{type:"output", data:{type:"system", subtype:"task_notification", summary, status}}`.
    static func systemTask(_ content: JSONValue) -> TaskNotification? {
        guard content["type"] == "output", let data = content["data"], data["type"] == "system", data["subtype"] == "task_notification",
            case .string(let summary)? = data["summary"], !HubText.isBlank(summary)
        else { return nil }
        return TaskNotification(summary: HubText.trim(summary), status: data["status"]?.stringValue.map(HubText.trim))
    }

    /// `{type:"output", data:{type:"user", content:"<task-notification>…"}}` (or `data.message.content`).
    static func userTask(_ content: JSONValue) -> TaskNotification? {
        guard content["type"] == "output", let data = content["data"], data["type"] == "user" else { return nil }
        guard let text = data["content"]?.stringValue ?? data["message"]?["content"]?.stringValue,
            HubText.trimStart(text).hasPrefix("<task-notification>"),
            let summary = element("summary", in: text).map(HubText.trim), !summary.isEmpty
        else { return nil }
        let status = element("status", in: text).map(HubText.trim)
        return TaskNotification(summary: summary, status: status?.isEmpty == false ? status : nil)
    }

    /// The text between the first `<name>` and the first `</name>` after it (across newlines).
    static func element(_ name: String, in text: String) -> String? {
        let scalars = Array(text.unicodeScalars)
        let open = Array("<\(name)>".unicodeScalars)
        let close = Array("</\(name)>".unicodeScalars)
        guard let start = HubText.find(open, in: scalars, from: 0), let end = HubText.find(close, in: scalars, from: start + open.count) else { return nil }
        return String(String.UnicodeScalarView(scalars[(start + open.count)..<end]))
    }

    // MARK: - Ready events (§4.1)

    /// Whether a `message-received` content is an event (`content.type` or `content.content.type`
    /// is `"event"`) whose `data.type` is `"ready"`. The role is not checked.
    static func isReadyEvent(_ content: JSONValue) -> Bool {
        let event: JSONValue?
        if content["type"] == "event" {
            event = content
        } else if let inner = content["content"], inner["type"] == "event" {
            event = inner
        } else {
            event = nil
        }
        return event?["data"]?["type"] == "ready"
    }
}
