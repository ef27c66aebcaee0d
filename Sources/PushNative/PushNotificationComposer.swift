public import PushEnvelope

/// Builds the contract's data payload from what happened in a session, exactly as every native
/// client expects it: types, titles, severities, the deep link, the `agent - project` name,
/// the question preview and the `AGENT_NOTIFY_SUMMARY`.
public enum PushNotificationComposer {
    /// The session a notification is about.
    public struct Session: Sendable, Hashable {
        public var id: String
        /// The agent's display name (`Claude`, `Codex`, `Cursor`…).
        public var agent: String
        /// The project (usually the working directory's name); nil when unknown.
        public var project: String?
        /// A deep link other than `/sessions/<id>`.
        public var url: String?

        public init(id: String, agent: String, project: String? = nil, url: String? = nil) {
            self.id = id
            self.agent = agent
            self.project = project
            self.url = url
        }

        /// `agent - project`, or the agent alone when there is no project.
        public var displayName: String {
            guard let project, !project.isEmpty else { return agent }
            return "\(agent) - \(project)"
        }

        var link: String { url ?? "/sessions/\(id)" }
    }

    /// The agent finished its turn and waits for input. `lastAgentText` may end with an
    /// `AGENT_NOTIFY_SUMMARY {json}` line, carried as `notifySummary`.
    public static func ready(_ session: Session, lastAgentText: String? = nil) -> PushNotificationPayload {
        PushNotificationPayload(
            type: .ready, sessionId: session.id, sessionName: session.displayName, url: session.link,
            title: "\(session.agent) is ready", body: "Ready for input", severity: .info,
            notifySummary: lastAgentText.flatMap(notifySummary(in:)))
    }

    /// A tool call waits for Allow/Deny. `requestId` is the approve/deny key.
    public static func permissionRequest(_ session: Session, requestId: String, toolName: String, detail: String? = nil)
        -> PushNotificationPayload
    {
        let summary = detail.map { flatten($0) }.flatMap { $0.isEmpty ? nil : $0 }
        return PushNotificationPayload(
            type: .permissionRequest, sessionId: session.id, sessionName: session.displayName, url: session.link,
            requestId: requestId, title: "\(session.agent) needs permission",
            body: truncate(summary.map { "\(toolName): \($0)" } ?? "Allow \(toolName)?", maximumScalars: 280), severity: .warning)
    }

    /// A task ended. `failed`, `error`, `killed` and `aborted` are errors; anything else a success.
    public static func taskNotification(_ session: Session, status: String, summary: String? = nil) -> PushNotificationPayload {
        let failed = ["failed", "error", "killed", "aborted"].contains(status.lowercased())
        let text = summary.map { flatten($0) }.flatMap { $0.isEmpty ? nil : $0 }
        return PushNotificationPayload(
            type: .taskNotification, sessionId: session.id, sessionName: session.displayName, url: session.link,
            title: failed ? "Task \(status.lowercased())" : "Task completed",
            body: truncate(text ?? (failed ? "\(session.agent) stopped: \(status)" : "\(session.agent) finished its task"), maximumScalars: 280),
            severity: failed ? .error : .success)
    }

    // MARK: - Questions

    /// The tools whose calls are questions to the user (also under a `functions.` prefix).
    /// Plan approval (`ExitPlanMode`), other tools and MCP tools that merely end in one of these
    /// names are not questions.
    public static let questionTools: Set<String> = ["request_user_input", "AskUserQuestion", "ask_user_question", "CursorAskQuestion"]

    public static func isQuestionTool(_ name: String) -> Bool {
        let bare = name.hasPrefix("functions.") ? String(name.dropFirst("functions.".count)) : name
        return questionTools.contains(bare)
    }

    /// The fallback body when a question call cannot be read.
    public static let unreadableQuestionBody = "Open the session to view and answer the question"

    /// An `input-request` for a question tool call, or nil when `toolName` is not a question
    /// tool (the hub then treats the call as it would any other).
    ///
    /// Body: the first readable question (its header when the text is empty), then
    /// `+N more question(s)`, then the session name, one per line, whitespace flattened within
    /// each line; at most 280 Unicode scalars in all and 80 for the session name, cut only
    /// between grapheme clusters. No options, prefilled answers, ids or raw arguments.
    public static func inputRequest(_ session: Session, requestId: String?, toolName: String, arguments: PushJSONValue?)
        -> PushNotificationPayload?
    {
        guard isQuestionTool(toolName) else { return nil }
        return PushNotificationPayload(
            type: .inputRequest, sessionId: session.id, sessionName: session.displayName, url: session.link, requestId: requestId,
            title: "\(session.agent) needs your input", body: questionBody(arguments: arguments, sessionName: session.displayName),
            severity: .info)
    }

    static func questionBody(arguments: JSONValue?, sessionName: String) -> String {
        let questions = readableQuestions(arguments)
        guard let first = questions.first else { return unreadableQuestionBody }
        let name = truncate(flatten(sessionName), maximumScalars: 80)
        var tail: [String] = []
        let more = questions.count - 1
        if more > 0 { tail.append("+\(more) more question\(more == 1 ? "" : "s")") }
        if !name.isEmpty { tail.append(name) }
        let tailScalars = tail.reduce(0) { $0 + $1.unicodeScalars.count + 1 }  // each preceded by "\n"
        let question = truncate(first, maximumScalars: max(1, 280 - tailScalars))
        return ([question] + tail).joined(separator: "\n")
    }

    /// Each question's text (or header when the text is empty), flattened; unreadable ones skipped.
    static func readableQuestions(_ arguments: JSONValue?) -> [String] {
        guard let arguments else { return [] }
        var candidates: [JSONValue] = []
        if let list = arguments["questions"]?.arrayValue {
            candidates = list
        } else if arguments["question"] != nil || arguments["prompt"] != nil {
            candidates = [arguments]
        }
        return candidates.compactMap { item -> String? in
            guard item.objectValue != nil else { return nil }
            let text = flatten(item["question"]?.stringValue ?? item["prompt"]?.stringValue ?? "")
            if !text.isEmpty { return text }
            let header = flatten(item["header"]?.stringValue ?? "")
            return header.isEmpty ? nil : header
        }
    }

    // MARK: - Text

    /// Collapses every run of whitespace (newlines included) to one space and trims the ends.
    package static func flatten(_ text: String) -> String {
        var result = ""
        var pendingSpace = false
        for character in text {
            if character.isWhitespace {
                pendingSpace = !result.isEmpty
                continue
            }
            if pendingSpace { result.append(" ") }
            pendingSpace = false
            result.append(character)
        }
        return result
    }

    /// At most `maximumScalars` Unicode scalars, ending in `…` when cut, and cut only between
    /// grapheme clusters: an emoji, a flag or a letter with its combining marks is kept whole
    /// or dropped whole.
    package static func truncate(_ text: String, maximumScalars: Int) -> String {
        guard text.unicodeScalars.count > maximumScalars else { return text }
        guard maximumScalars > 0 else { return "" }
        var result = ""
        var used = 1  // the ellipsis
        for character in text {
            let size = character.unicodeScalars.count
            if used + size > maximumScalars { break }
            result.append(character)
            used += size
        }
        while result.last?.isWhitespace == true { result.removeLast() }
        return result + "…"
    }

    // MARK: - Summary

    static let summaryMarker = "AGENT_NOTIFY_SUMMARY"

    /// The JSON after a trailing `AGENT_NOTIFY_SUMMARY` line, re-serialized canonically; nil
    /// when the last non-empty line is not such a line or its JSON does not parse.
    public static func notifySummary(in text: String) -> String? {
        let lines = text.split(omittingEmptySubsequences: true) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
        guard let last = lines.last(where: { !$0.allSatisfy(\.isWhitespace) }) else { return nil }
        let trimmed = last.drop { $0.isWhitespace }
        guard trimmed.hasPrefix(summaryMarker) else { return nil }
        let json = trimmed.dropFirst(summaryMarker.count)
        guard json.first?.isWhitespace == true, let value = try? JSONParser.parse(String(json)) else { return nil }
        return value.canonicalString
    }
}
