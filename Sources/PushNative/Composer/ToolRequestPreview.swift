import PushEnvelope

/// The JavaScript hub's two tool-argument formatters (js-hub-behaviour.md R1.6): a compact one
/// for the glance line and a detailed one (arguments cut at 120 units) for the detail line.
///
/// JavaScript's formatters throw on a value of the wrong type where they expect a string (say
/// `command: 123`) and the hub shows nothing for that formatter; here such a value makes the
/// formatter return `""` in the same way. Falsy values (`null`, `false`, `0`, `""`) count as
/// missing, as they do there.
enum ToolRequestPreview {
    /// One argument as the formatters see it.
    enum Argument {
        case missing
        case text(String)
        /// Present and truthy but not a string: the JavaScript formatter would throw.
        case invalid
    }

    static func argument(_ value: JSONValue?) -> Argument {
        switch value {
        case nil, .null?, .bool(false)?, .integer(0)?: return .missing
        case .double(let d)? where d == 0: return .missing
        case .string(let s)?: return s.isEmpty ? .missing : .text(s)
        default: return .invalid
        }
    }

    /// Whether the arguments are something the formatters read (a JavaScript object: an object or an array).
    static func isObject(_ arguments: JSONValue?) -> Bool {
        switch arguments {
        case .object?, .array?: return true
        default: return false
        }
    }

    /// `file_path`, or `path` when `file_path` is null or missing.
    static func file(_ arguments: JSONValue) -> Argument {
        switch arguments["file_path"] {
        case nil, .null?: return argument(arguments["path"])
        case let value: return argument(value)
        }
    }

    /// `description`, or `prompt` when `description` is null or missing.
    static func task(_ arguments: JSONValue) -> Argument {
        switch arguments["description"] {
        case nil, .null?: return argument(arguments["prompt"])
        case let value: return argument(value)
        }
    }

    /// T-tool of an argument; nil where JavaScript would throw.
    static func cut(_ argument: Argument, _ max: Int) -> String? {
        switch argument {
        case .missing: return ""
        case .text(let text): return HubText.toolTruncate(text, max: max)
        case .invalid: return nil
        }
    }

    /// The detail line's file, `file_path ?? path ?? "unknown"`, then T-tool: `??` passes over
    /// only null and missing, so a present falsy value (`""`, `false`, `0`) is kept and shown
    /// empty (`File: `), and only an absent file reads `unknown`.
    static func detailedFile(_ arguments: JSONValue, _ max: Int) -> String? {
        let named: JSONValue?
        switch arguments["file_path"] {
        case nil, .null?: named = arguments["path"]
        case let value: named = value
        }
        switch named {
        case nil, .null?: return "unknown"
        case let value?: return cut(argument(value), max)
        }
    }

    /// The path unchanged when it has at most two `/`-parts, else `.../` and its last two.
    static func shortPath(_ path: String) -> String {
        let parts = HubText.split(path, on: "/")
        guard parts.count > 2 else { return path }
        return ".../" + parts.suffix(2).joined(separator: "/")
    }

    static func shortPath(_ argument: Argument) -> String? {
        switch argument {
        case .missing: return ""
        case .text(let text): return shortPath(text)
        case .invalid: return nil
        }
    }

    /// `todos.length`, 0 when missing: an array's count, a string's UTF-16 length, an object's
    /// own `length` member as JavaScript prints it; 0 for anything without a length.
    static func todoCount(_ arguments: JSONValue) -> String {
        switch arguments["todos"] {
        case .array(let elements)?: return String(elements.count)
        case .string(let text)?: return String(HubText.length(text))
        case .object?:
            guard let length = arguments["todos"]?["length"], length != .null else { return "0" }
            return HubText.javaScriptString(length)
        default: return "0"
        }
    }

    /// The glance line's argument (`""` when there is none).
    static func compact(tool: String, arguments: JSONValue?) -> String {
        guard let arguments, isObject(arguments) else { return "" }
        let result: String?
        switch tool {
        case "Edit", "Write", "Read": result = shortPath(file(arguments))
        case "Bash": result = cut(argument(arguments["command"]), 60)
        case "Agent", "Task": result = cut(task(arguments), 60)
        case "Grep", "Glob": result = cut(argument(arguments["pattern"]), 60)
        case "WebFetch":
            let url = argument(arguments["url"])
            if case .text(let text) = url, let host = HubURL.host(of: text) {
                result = host
            } else {
                result = cut(url, 60)
            }
        case "TodoWrite": result = "\(todoCount(arguments)) items"
        default: result = ""
        }
        return result ?? ""
    }

    /// The detail line (`""` when there is none); at most 242 units for the known tools.
    static func detailed(tool: String, arguments: JSONValue?) -> String {
        guard let arguments, isObject(arguments) else { return "" }
        let max = 120
        var result: String?
        switch tool {
        case "Edit":
            result = detailedFile(arguments, max).map { "File: " + $0 }
            // A truthy old or new value of any type is shown as JavaScript's String(value).
            for (key, label) in [("old_string", "Old"), ("new_string", "New")] {
                guard let raw = arguments[key] else { continue }
                if case .missing = argument(raw) { continue }
                result = result.map { $0 + "\n\(label): \"" + HubText.toolTruncate(HubText.javaScriptString(raw), max: 50) + "\"" }
            }
        case "Write":
            result = detailedFile(arguments, max).map { "File: " + $0 }
            switch arguments["content"] {
            case nil, .null?, .bool(false)?, .integer(0)?, .string("")?: break
            case .double(let d)? where d == 0: break
            case let value?:  // the length of String(content), whatever its type
                result = result.map { $0 + " (\(HubText.length(HubText.javaScriptString(value))) chars)" }
            }
        case "Read": result = detailedFile(arguments, max).map { "File: " + $0 }
        case "Bash": result = cut(argument(arguments["command"]), max).map { "Command: " + $0 }
        case "Agent", "Task": result = cut(task(arguments), max).map { "Task: " + $0 }
        case "Grep", "Glob":
            result = cut(argument(arguments["pattern"]), max).map { "Pattern: " + $0 }
            let path = argument(arguments["path"])
            if case .missing = path {} else { result = result.flatMap { line in cut(path, 80).map { line + "\nPath: " + $0 } } }
        case "WebFetch": result = cut(argument(arguments["url"]), max).map { "URL: " + $0 }
        case "TodoWrite": result = "Updating \(todoCount(arguments)) todo items"
        default:
            // JSON.stringify in JavaScript's enumeration order; only when longer than 10 units.
            let json = arguments.javaScriptString
            result = HubText.length(json) > 10 ? "Args: " + HubText.toolTruncate(json, max: max) : ""
        }
        return result ?? ""
    }
}
