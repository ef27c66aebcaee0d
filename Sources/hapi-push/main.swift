#if os(Linux) && !HAPI_PUSH_PORTABLE
import CHapiMallocArena
#endif
import Foundation
import PushNative

/// `hapi-push`: the operator's command line for the native push library.
let topUsage = """
    hapi-push: native push dispatch for a HAPI hub (relay, direct APNs, direct FCM)

    Usage: hapi-push [--data-dir DIR] <command> [options]

    Commands:
      config [--json]      Show the transport chosen for each platform, every setting's source, diagnostics
      devices register|unregister|list   Manage the device registry (DIR/native-push.sqlite3)
      webpush subscribe|unsubscribe|list|vapid-public-key   Web Push subscriptions and the VAPID public key
      send                 Dispatch one notification to every device of a namespace (then Web Push, as the hub)
      compose --event F    Print the payload the hub would seal for an iOS device after one event (--web: the Web Push one)
      envelope seal|open   Seal or open an end-to-end encrypted push envelope
      demo                 The whole flow against loopback stand-ins (no network, no credentials)

    Run 'hapi-push <command> --help' for a command's options.
    Exit codes: 0 success, 1 failure, 2 usage error or invalid input.
    """

func runCommand(_ allArguments: [String]) async -> Int32 {
    var arguments = allArguments
    var dataDirectory: String?
    // Global options come before the command.
    while let first = arguments.first, first.hasPrefix("--data-dir") {
        if first == "--data-dir" {
            guard arguments.count >= 2 else { return usageFailure("--data-dir needs a value") }
            dataDirectory = arguments[1]
            arguments.removeFirst(2)
        } else {
            dataDirectory = String(first.dropFirst("--data-dir=".count))
            arguments.removeFirst()
        }
        if dataDirectory?.isEmpty ?? true { return usageFailure("--data-dir must not be empty") }
    }
    guard let command = arguments.first else {
        FileHandle.standardError.write(Data((topUsage + "\n").utf8))
        return ExitCode.usage.rawValue
    }
    let rest = Array(arguments.dropFirst())
    do {
        switch command {
        case "--help", "-h", "help":
            print(topUsage)
            return ExitCode.success.rawValue
        case "envelope":
            return try EnvelopeCommand.run(rest)
        case "config":
            return try ConfigCommand.run(rest, dataDirectory: dataDirectory)
        case "send":
            return try await SendCommand.run(rest, dataDirectory: dataDirectory)
        case "compose":
            return try ComposeCommand.run(rest)
        case "devices":
            return try await DevicesCommand.run(rest, dataDirectory: dataDirectory)
        case "webpush":
            return try await WebPushCommand.run(rest, dataDirectory: dataDirectory)
        case "demo":
            return try DemoCommand.run(rest)
        default:
            throw UsageError("unknown command '\(command)'; run 'hapi-push --help'")
        }
    } catch let error as UsageError {
        printError(lines: error.lines)
        return ExitCode.usage.rawValue
    } catch let error as CommandFailure {
        printError(error.message)
        return ExitCode.failure.rawValue
    } catch {
        printError("\(error)")
        return ExitCode.failure.rawValue
    }
}

func usageFailure(_ message: String) -> Int32 {
    printError(message)
    return ExitCode.usage.rawValue
}

/// One message on stderr, escaped (`Terminal.line`): a value quoted in it (an argument, a path,
/// a device id) can never start a line of its own or move the cursor. `lines` are ours.
func printError(_ message: String) { printError(lines: [message]) }

func printError(lines: [String]) {
    FileHandle.standardError.write(Data(("hapi-push: " + lines.map { Terminal.line($0) }.joined(separator: "\n") + "\n").utf8))
}

/// The arguments exactly as given, or nil (after a message) when one is not valid UTF-8:
/// `CommandLine.arguments` would silently turn such bytes into U+FFFD, and a device id, token or
/// path would then name something other than what the operator typed.
func validatedArguments() -> [String]? {
    var arguments: [String] = []
    for index in 1..<Int(max(CommandLine.argc, 1)) {
        guard let raw = CommandLine.unsafeArgv[index] else { continue }
        guard let argument = String(validatingCString: raw) else {
            FileHandle.standardError.write(Data("hapi-push: argument \(index) is not valid UTF-8: pass text in UTF-8\n".utf8))
            return nil
        }
        arguments.append(argument)
    }
    return arguments
}

// This process is ours, not a host's: one malloc arena for all its threads. With one arena per
// thread (glibc's default), memory freed by the HTTP/2 thread is not reused by the dispatch's
// threads, and a send to 10,000 devices peaks ~3 MB higher for nothing.
#if os(Linux) && !HAPI_PUSH_PORTABLE
_ = hapi_use_one_malloc_arena()
#else
// Other systems' allocators (and glibc on the portable path) keep their own arena policy.
#endif
guard let arguments = validatedArguments() else { exit(ExitCode.usage.rawValue) }
exit(await runCommand(arguments))
