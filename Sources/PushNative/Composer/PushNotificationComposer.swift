import PushEnvelope

/// Builds the contract's data payload from what happened in a session, as the JavaScript hub
/// does (`PushNotificationComposer+Hub.swift`): from the session as the hub stores it
/// (`PushSession`), its last messages and its pending requests. This file holds what the
/// seed contract adds: question tools become an `input-request` with the contract's preview.
public enum PushNotificationComposer {
    // MARK: - Questions

    /// The tools whose calls are questions to the user (also under a `functions.` prefix).
    /// Plan approval (`ExitPlanMode`), other tools and MCP tools that merely end in one of these
    /// names are not questions.
    public static let questionTools: Set<String> = ["request_user_input", "AskUserQuestion", "ask_user_question", "CursorAskQuestion"]

    public static func isQuestionTool(_ name: String) -> Bool {
        let bare = name.hasPrefix("functions.") ? String(name.dropFirst("functions.".count)) : name
        return questionTools.contains(bare)
    }

    /// Whether a pending request is a question tool's call: the one branch both channels take
    /// (an `input-request` instead of a permission request).
    static func isQuestionRequest(_ request: (id: String, request: JSONValue)) -> Bool {
        if case .string(let tool)? = request.request["tool"] { return isQuestionTool(tool) }
        return false
    }

    /// The task statuses that make a task notification `Task failed` (trimmed, case-insensitive),
    /// as the JavaScript hub's list has them; both channels read this one list.
    static let failedTaskStatuses = ["failed", "error", "killed", "aborted"]

    static func isFailedTaskStatus(_ status: String?) -> Bool {
        let status = HubText.trim(status ?? "").lowercased()
        return failedTaskStatuses.contains { HubText.same($0, status) }
    }

    /// The fallback body when a question call cannot be read.
    public static let unreadableQuestionBody = "Open the session to view and answer the question"

    /// The `input-request` body (the seed contract, which counts in Unicode code points, not
    /// the JavaScript hub's UTF-16 units): the first readable question (its header when the text
    /// is empty), then `+N more question(s)`, then the session name, one per line, whitespace
    /// flattened within each line; at most 280 code points in all and 80 for the session name,
    /// cut only between grapheme clusters. No options, prefilled answers, ids or raw arguments.
    static func questionBody(arguments: JSONValue?, sessionName: String) -> String {
        let questions = readableQuestions(arguments)
        guard let first = questions.first else { return unreadableQuestionBody }
        let name = truncateQuestion(flatten(sessionName), maximumScalars: 80)
        var tail: [String] = []
        let more = questions.count - 1
        if more > 0 { tail.append("+\(more) more question\(more == 1 ? "" : "s")") }
        if !name.isEmpty { tail.append(name) }
        let tailScalars = tail.reduce(0) { $0 + $1.unicodeScalars.count + 1 }  // each preceded by "\n"
        let question = truncateQuestion(first, maximumScalars: max(1, 280 - tailScalars))
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

    /// The contract's cut for question previews: at most `maximumScalars` Unicode scalars,
    /// ending in `…` when cut, and cut only between grapheme clusters: an emoji, a flag or a letter with its combining marks is kept whole
    /// or dropped whole.
    package static func truncateQuestion(_ text: String, maximumScalars: Int) -> String {
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
}
