import Foundation
import PushNative
import PushEnvelope

/// `hapi-push devices register|unregister|list`: the registry by hand. Never prints a push
/// key or a whole token: tokens appear as the first 12 hex digits of their SHA-256.
enum DevicesCommand {
    static let usage = """
        Usage:
          hapi-push [--data-dir DIR] devices register --namespace NS --platform phone|wear|ios --device-id ID --token T [--push-key B64]
          hapi-push [--data-dir DIR] devices register --namespace NS --request FILE|-
          hapi-push [--data-dir DIR] devices unregister --namespace NS --token T
          hapi-push [--data-dir DIR] devices list --namespace NS [--json]

        The registry is PostgreSQL when HAPI_PUSH_DATABASE_URL (or settings.json "pushDatabaseUrl") is set,
        else DIR/\(SQLitePushDeviceStore.defaultFileName) (DIR defaults to $HAPI_HOME, else ~/.hapi).
        list --json prints an array of {namespace, deviceId, platform, tokenHash, hasPushKey, createdAt, updatedAt};
        tokenHash is the first 12 hex digits of the token's SHA-256. Push keys are never printed.
        Validation failures exit 2 and name every failing field.
        register --request feeds a raw request body (a file, or - for standard input) to the same handler as
        POST /api/devices/register for NS and prints the answer's body: {"ok":true} (exit 0), or the 400 body
        {"error":"Invalid body","issues":{"formErrors":[...],"fieldErrors":{...}}} (exit 2).
        """

    static func run(_ arguments: [String], dataDirectory: String?) async throws -> Int32 {
        guard let (sub, rest) = try splitSubcommand(arguments, usage: usage, command: "devices") else { return ExitCode.success.rawValue }
        switch sub {
        case "register":
            let args = try ParsedArguments(rest, valueFlags: ["namespace", "platform", "device-id", "token", "push-key", "request"])
            try args.rejectPositionals()
            if let path = args.value("request") {
                return try await registerRequest(args, path: path, dataDirectory: dataDirectory)
            }
            let (namespace, platform) = (try args.required("namespace"), try args.required("platform"))
            let (deviceId, token) = (try args.required("device-id"), try args.required("token"))
            let request: PushRegistrationRequest
            do {
                request = try PushRegistrationRequest(
                    namespace: namespace, platform: platform, deviceId: deviceId, token: token, pushKey: args.value("push-key"))
            } catch {
                let lines = error.formErrors.map { "  \($0)" } + error.orderedFieldErrors.flatMap { entry in
                    entry.messages.map { "  \(cliName(entry.field)): \($0)" }
                }
                throw UsageError(lines: ["invalid registration:"] + lines)
            }
            let registry = PushDeviceRegistry(store: try await openStore(dataDirectory))
            let stored = try await registry.register(request)
            print(
                "registered \(stored.platform) device \(Terminal.line(stored.deviceId)) in namespace \(Terminal.line(stored.namespace)) (token \(stored.tokenHash))")
            return ExitCode.success.rawValue
        case "unregister":
            let args = try ParsedArguments(rest, valueFlags: ["namespace", "token"])
            try args.rejectPositionals()
            let namespace = try args.required("namespace")
            let token = try args.required("token")
            guard !token.isEmpty else { throw UsageError("--token must not be empty") }
            let removed = try await PushDeviceRegistry(store: try await openStore(dataDirectory)).unregister(namespace: namespace, token: token)
            print(
                removed
                    ? "unregistered token \(TokenFingerprint.of(token))"
                    : "no device with token \(TokenFingerprint.of(token)) in namespace \(Terminal.line(namespace))")
            return ExitCode.success.rawValue
        case "list":
            let args = try ParsedArguments(rest, valueFlags: ["namespace"], switchFlags: ["json"])
            try args.rejectPositionals()
            let namespace = try args.required("namespace")
            let devices = try await openStore(dataDirectory).devices(namespace: namespace)
            if args.has("json") {
                let array = JSONValue.array(devices.map { device in
                    .object([
                        "namespace": .string(device.namespace), "deviceId": .string(device.deviceId),
                        "platform": .string(device.platform.rawValue), "tokenHash": .string(device.tokenHash),
                        "hasPushKey": .bool(device.pushKey != nil), "createdAt": .integer(device.createdAt),
                        "updatedAt": .integer(device.updatedAt),
                    ])
                })
                print(Terminal.json(array))
            } else if devices.isEmpty {
                print("no devices in namespace \(Terminal.line(namespace))")
            } else {
                print("PLATFORM  DEVICE ID                         TOKEN          KEY  UPDATED")
                for device in devices {
                    let updated = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(device.updatedAt) / 1000))
                    print(
                        pad(device.platform.rawValue, 9) + " " + pad(Terminal.line(device.deviceId), 33) + " " + pad(device.tokenHash + "…", 14) + " "
                            + pad(device.pushKey == nil ? "no" : "yes", 4) + " " + updated)
                }
            }
            return ExitCode.success.rawValue
        default:
            throw UsageError("unknown devices command '\(sub)' (expected register, unregister or list)")
        }
    }

    /// `register --request`: the hub's handler on a raw body. A refused body never opens the registry.
    static func registerRequest(_ args: ParsedArguments, path: String, dataDirectory: String?) async throws -> Int32 {
        for flag in ["platform", "device-id", "token", "push-key"] where args.value(flag) != nil {
            throw UsageError("--request takes the whole body; do not combine it with --\(flag)")
        }
        let namespace = try args.required("namespace")
        let body = try InputFile.read(path, option: "request")
        do {
            _ = try PushDeviceRegistry.decodeRegistration(namespace: namespace, body: body)
        } catch {
            print(Terminal.jsonText(error.responseBody))
            return ExitCode.usage.rawValue
        }
        let answer = await PushDeviceRegistry(store: try await openStore(dataDirectory)).handleRegister(namespace: namespace, body: body)
        print(Terminal.jsonText(answer.body))
        switch answer.status {
        case 200: return ExitCode.success.rawValue
        case 400: return ExitCode.usage.rawValue
        default: return ExitCode.failure.rawValue
        }
    }

    /// The registry the hub would use: HAPI_PUSH_DATABASE_URL, else SQLite in the data directory.
    static func openStore(_ dataDirectory: String?) async throws -> any PushDeviceStore {
        let environment = ProcessInfo.processInfo.environment
        guard let directory = dataDirectory ?? HubDataDirectory.resolve(environment: environment) else {
            throw UsageError("no data directory: pass --data-dir DIR or set HAPI_HOME or HOME")
        }
        let configuration: PushConfiguration
        do {
            configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: false)
        } catch {
            throw CommandFailure(error.message)
        }
        do {
            return try await configuration.registry.open()
        } catch {
            throw CommandFailure(error.message)
        }
    }

    private static func cliName(_ field: String) -> String {
        switch field {
        case "deviceId": return "--device-id (deviceId)"
        case "pushKey": return "--push-key (pushKey)"
        default: return "--\(field)"
        }
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

extension ParsedArguments {
    func rejectPositionals() throws(UsageError) {
        if let first = positionals.first { throw UsageError("unexpected argument '\(first)'") }
    }
}
