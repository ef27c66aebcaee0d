/// A deliberately small command-line parser: `--flag VALUE`, `--flag=VALUE` and boolean
/// `--switch`. Unknown flags, missing values and repeated flags are usage errors (exit 2).
struct ParsedArguments {
    private(set) var values: [String: String] = [:]
    private(set) var switches: Set<String> = []
    private(set) var positionals: [String] = []

    /// Parses `arguments` given the flags that take a value and the boolean switches.
    init(_ arguments: [String], valueFlags: Set<String>, switchFlags: Set<String> = []) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--"), argument.count > 2 else {
                positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if switchFlags.contains(name) {
                guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                switches.insert(name)
                continue
            }
            guard valueFlags.contains(name) else { throw UsageError("unknown option --\(name)") }
            guard values[name] == nil else { throw UsageError("--\(name) given more than once") }
            if let inlineValue {
                values[name] = inlineValue
            } else {
                guard index < arguments.count else { throw UsageError("--\(name) needs a value") }
                values[name] = arguments[index]
                index += 1
            }
        }
    }

    func value(_ name: String) -> String? { values[name] }

    func required(_ name: String) throws(UsageError) -> String {
        guard let value = values[name] else { throw UsageError("missing required option --\(name)") }
        return value
    }

    func has(_ name: String) -> Bool { switches.contains(name) }
}

/// Bad command-line input: printed on stderr, exit code 2. Each line is escaped when printed,
/// so a newline inside a quoted value stays inside its line.
struct UsageError: Error {
    let lines: [String]
    init(_ message: String) { lines = [message] }
    init(lines: [String]) { self.lines = lines }
    var message: String { lines.joined(separator: "\n") }
}

/// A failure after the input was accepted (I/O, network, a store): exit code 1.
struct CommandFailure: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// The CLI's exit codes, a contract with operators' scripts.
enum ExitCode: Int32 {
    case success = 0
    case failure = 1
    case usage = 2
}

/// Splits `<subcommand> [options]`. Prints `usage` and returns nil when help was asked for
/// (the caller exits 0); a missing subcommand is a usage error (exit 2).
func splitSubcommand(_ arguments: [String], usage: String, command: String) throws(UsageError) -> (String, [String])? {
    guard let sub = arguments.first else { throw UsageError("\(command) needs a subcommand; run 'hapi-push \(command) --help'") }
    if sub == "--help" || sub == "-h" || arguments.dropFirst().contains("--help") || arguments.dropFirst().contains("-h") {
        print(usage)
        return nil
    }
    return (sub, Array(arguments.dropFirst()))
}
