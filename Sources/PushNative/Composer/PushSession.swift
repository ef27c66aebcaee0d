public import PushEnvelope

/// A session as the hub's store holds it, for notifications: its id, whether it is active, and
/// its `metadata` and `agentState` as the JavaScript hub keeps them (JSON values a Swift hub fills
/// from its own store). Everything the JavaScript hub derives from a session for a push is
/// derived here the same way.
public struct PushSession: Sendable, Hashable {
    public var id: String
    /// Inactive sessions get no push (and clear the scheduler's state for them).
    public var active: Bool
    /// `{flavor, name, summary: {text}, path, …}`; `.null` when there is none.
    public var metadata: PushJSONValue
    /// `{requests: {<requestId>: {tool, arguments}}, …}`; `.null` when there is none.
    public var agentState: PushJSONValue

    public init(id: String, active: Bool = true, metadata: PushJSONValue = .null, agentState: PushJSONValue = .null) {
        self.id = id
        self.active = active
        self.metadata = metadata
        self.agentState = agentState
    }

    /// The agent's display name from `metadata.flavor` (R1.2): an exact, case-sensitive lookup;
    /// anything else (a missing flavor, `"Claude"`, `"toString"`) is `Agent`.
    public var agentName: String {
        guard case .string(let flavor)? = metadata["flavor"] else { return "Agent" }
        return Self.agentNames.first { HubText.same($0.flavor, flavor) }?.name ?? "Agent"
    }

    static let agentNames: [(flavor: String, name: String)] = [
        ("agy", "Antigravity"), ("claude", "Claude"), ("gemini", "Gemini"), ("kimi", "Kimi"), ("copilot", "Copilot"),
        ("grok", "Grok Build"), ("codex", "Codex"), ("dsh", "DeepSeek Harness"), ("cursor", "Cursor"), ("opencode", "OpenCode"),
        ("pi", "Pi"),
    ]

    /// The session's display name (R1.1): `metadata.name`, else `metadata.summary.text`, else the
    /// last non-empty `/`-segment of `metadata.path`, else the first 8 UTF-16 units of the id.
    /// Names are used as they are (not trimmed); a value that is not a string is skipped.
    public var displayName: String {
        if case .string(let name)? = metadata["name"], !name.isEmpty { return name }
        if case .string(let text)? = metadata["summary"]?["text"], !text.isEmpty { return text }
        if case .string(let path)? = metadata["path"], !path.isEmpty {
            return HubText.split(path, on: "/").last { !$0.isEmpty } ?? HubText.prefix(id, units: 8)
        }
        return HubText.prefix(id, units: 8)
    }

    /// The deep link, `/sessions/<id>` (not percent-encoded).
    public var url: String { "/sessions/" + id }

    /// `agentState.requests` when it is present (neither null nor missing).
    var requests: JSONValue? {
        guard let requests = agentState["requests"], requests != .null else { return nil }
        return requests
    }

    /// The pending requests in JavaScript's `Object.entries` order: array-index ids first in
    /// numeric order, then the others as inserted. The first one is what a permission push is
    /// about (R1.4). A `requests` that is not an object holds none.
    public var pendingRequests: [(id: String, request: PushJSONValue)] {
        guard let members = requests?.objectValue else { return [] }
        return JSONKey.enumerationOrder(members).map { (id: $0.key, request: $0.value) }
    }
}
