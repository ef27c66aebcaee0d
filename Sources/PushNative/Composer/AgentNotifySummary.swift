import PushEnvelope

/// The `AGENT_NOTIFY_SUMMARY {json}` footer an agent may end its text with, read exactly as the
/// JavaScript hub reads it (js-hub-behaviour.md §2): only the last non-blank line, the token
/// glued to the start of that line or to a non-space character, a JSON object after it; six known
/// fields kept, everything else dropped.
struct AgentNotifySummary: Equatable {
    /// Kept only when it is a JSON number; written back as JavaScript prints numbers.
    var version: JSONValue?
    var summary: String?
    var action: String?
    var status: String?
    var agent: String?
    var project: String?

    static let token: [Unicode.Scalar] = Array("AGENT_NOTIFY_SUMMARY ".unicodeScalars)

    /// The footer of `text`, or nil when its last non-blank line carries none.
    static func extract(from text: String) -> AgentNotifySummary? {
        // Split on "\n" only (a CR stays on its line); the candidate is the last non-blank line.
        let lines = HubText.split(text, on: "\n")
        guard let candidate = lines.last(where: { !HubText.isBlank($0) }) else { return nil }
        let line = Array(HubText.trimEnd(candidate).unicodeScalars)
        var start = 0
        while let index = HubText.find(token, in: line, from: start) {
            start = index + 1
            // A prose mention ("Example: AGENT_…") is skipped: text before it and a space right before it.
            let before = line[..<index]
            if !before.allSatisfy(HubText.isWhitespace), HubText.isWhitespace(line[index - 1]) { continue }
            let rest = HubText.trim(String(String.UnicodeScalarView(line[(index + token.count)...])))
            guard rest.hasPrefix("{"), rest.hasSuffix("}"),
                let value = try? JSONParser.parse(Array(rest.utf8), overflowingToInfinity: true), value.objectValue != nil
            else { continue }
            return AgentNotifySummary(json: value)
        }
        return nil
    }

    /// The six known fields of a parsed footer (last duplicate wins, as `JSON.parse`).
    init(json: JSONValue) {
        switch json["version"] {
        case .integer?, .double?: version = json["version"]
        default: version = nil
        }
        func text(_ key: String) -> String? { json[key]?.stringValue }
        summary = text("summary")
        action = text("action")
        status = text("status")
        agent = text("agent")
        project = text("project")
    }

    init(version: JSONValue? = nil, summary: String? = nil, action: String? = nil, status: String? = nil, agent: String? = nil, project: String? = nil) {
        self.version = version
        self.summary = summary
        self.action = action
        self.status = status
        self.agent = agent
        self.project = project
    }

    /// The `notifySummary` string (§2.5): `JSON.stringify` of `version` (a number), `summary`
    /// (always), then `action`, `status`, `agent`, `project` when their raw value is non-empty,
    /// in that insertion order, each cut by T-ready (summary and action 280, status 32, agent and
    /// project 80).
    var serialized: String {
        var members: [(key: String, value: JSONValue)] = []
        if let version { members.append((key: "version", value: version)) }
        members.append((key: "summary", value: .string(HubText.readyTruncate(summary ?? "", limit: 280))))
        for (key, raw, limit) in [("action", action, 280), ("status", status, 32), ("agent", agent, 80), ("project", project, 80)] {
            if let raw, !raw.isEmpty { members.append((key: key, value: .string(HubText.readyTruncate(raw, limit: limit)))) }
        }
        return JSONValue.object(members).javaScriptString
    }
}
