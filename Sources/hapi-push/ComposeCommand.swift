import PushEnvelope
import PushNative

/// `hapi-push compose --event FILE|-`: what the hub would seal for an iOS device after one
/// event, composed as the JavaScript hub composes it. For operators checking a notification and
/// for testing the composer from outside.
enum ComposeCommand {
    static let usage = """
        Usage: hapi-push compose --event FILE|- [--web]

        Reads one hub event as JSON (a file, or - for standard input):
          {"event":"ready"|"permission"|"task"|"input",
           "session":{"id":…,"active":true|false,"metadata":{…},"agentState":{"requests":{…}}},
           "messages":[{"id","seq","localId","createdAt","content"},…],   (stored rows, oldest first; ready reads the last 20)
           "content":{…}}                                                    (a message-received content, for task)
        and prints, on one line, the canonical plaintext payload that would be sealed for an iOS device
        (after the \(PushEnvelopeCipher.maximumEnvelopeLength)-byte ladder), or null when the hub would send nothing: an inactive session, a task
        event whose content holds no task notification, a permission or input event with no pending request.
        permission and input both mean "the permission debounce fired": the first pending request is
        composed, as an input-request when it is a question tool.
        With --web: the Web Push payload the JavaScript hub would send the browser for that event instead,
        {title, body, tag, data} in JSON.stringify order (web-push.md §3), one line, or null.
        Exit 0; 2 for malformed input, naming the problem.
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            return ExitCode.success.rawValue
        }
        let args = try ParsedArguments(arguments, valueFlags: ["event"], switchFlags: ["web"])
        try args.rejectPositionals()
        let bytes = try InputFile.read(try args.required("event"), option: "event")
        let event: JSONValue
        do {
            event = try JSONParser.parse(bytes, overflowingToInfinity: true)
        } catch {
            throw UsageError("--event is not JSON: \(error.description)")
        }
        if args.has("web") {
            print(try composeWeb(event)?.json ?? "null")
            return ExitCode.success.rawValue
        }
        let payload = try compose(event)
        print(payload.flatMap { PayloadFitter.fitEnvelope($0) }.map { String(decoding: $0.0.canonicalJSON, as: UTF8.self) } ?? "null")
        return ExitCode.success.rawValue
    }

    /// The payload the hub would send for `event`, or nil when it would send nothing.
    static func compose(_ event: JSONValue) throws(UsageError) -> PushNotificationPayload? {
        guard event.objectValue != nil else { throw UsageError("the event must be a JSON object, not \(event.typeName)") }
        guard case .string(let kind)? = event["event"], ["ready", "permission", "task", "input"].contains(kind) else {
            throw UsageError(#"event must be "ready", "permission", "task" or "input""#)
        }
        let session = try readSession(event["session"])
        let messages = try readMessages(event["messages"])
        let content = event["content"]
        if kind == "task", content == nil { throw UsageError("content is required for a task event (a message-received content)") }
        guard session.active else { return nil }
        switch kind {
        case "ready": return PushNotificationComposer.ready(for: session, messages: messages)
        case "task": return PushNotificationComposer.taskNotification(for: session, content: content ?? .null)
        default: return PushNotificationComposer.pendingRequest(for: session)
        }
    }

    /// The Web Push payload the hub would send for `event`, or nil when it would send nothing.
    static func composeWeb(_ event: JSONValue) throws(UsageError) -> PushWebPayload? {
        // The same checks and the same cases as the native composition.
        let native = try compose(event)
        guard case .string(let kind)? = event["event"], let session = try? readSession(event["session"]), session.active else { return nil }
        switch kind {
        case "ready": return PushNotificationComposer.webReady(for: session)
        case "task": return PushNotificationComposer.webTaskNotification(for: session, content: event["content"] ?? .null)
        default: return native == nil ? nil : PushNotificationComposer.webPendingRequest(for: session)
        }
    }

    static func readSession(_ value: JSONValue?) throws(UsageError) -> PushSession {
        guard let value, value.objectValue != nil else { throw UsageError("session must be an object {id, active, metadata, agentState}") }
        guard case .string(let id)? = value["id"], !id.isEmpty else { throw UsageError("session.id must be a non-empty string") }
        guard case .bool(let active)? = value["active"] else { throw UsageError("session.active must be true or false") }
        for field in ["metadata", "agentState"] {
            switch value[field] {
            case nil, .null?, .object?: break
            case let other?: throw UsageError("session.\(field) must be an object or null, not \(other.typeName)")
            }
        }
        return PushSession(id: id, active: active, metadata: value["metadata"] ?? .null, agentState: value["agentState"] ?? .null)
    }

    /// Each row's `content`, oldest first.
    static func readMessages(_ value: JSONValue?) throws(UsageError) -> [JSONValue] {
        guard let value else { return [] }
        guard let rows = value.arrayValue else { throw UsageError("messages must be an array of message rows, not \(value.typeName)") }
        var contents: [JSONValue] = []
        for (index, row) in rows.enumerated() {
            guard row.objectValue != nil else { throw UsageError("messages[\(index)] must be an object (a message row), not \(row.typeName)") }
            contents.append(row["content"] ?? .null)
        }
        return contents
    }
}
