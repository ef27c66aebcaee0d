import Foundation
import PushNative

/// `hapi-push config [--json]`: what the hub would do with this environment and settings.json:
/// each platform's mode and transport, where every value came from, and every diagnostic.
/// Shows paths and ids, never key contents or tokens.
enum ConfigCommand {
    static let usage = """
        Usage: hapi-push [--data-dir DIR] config [--json] [--no-persist]

        Resolves every push setting (environment > DIR/settings.json > default), checks the APNs key
        and FCM service account, and prints each platform's transport with the reason, the source of
        every setting, and every diagnostic. Like the hub, it writes environment values whose keys
        settings.json lacks into the file (first sight); --no-persist only reads.
        The registry is PostgreSQL when HAPI_PUSH_DATABASE_URL is set (shown with its password as ***), else SQLite.
        --json prints {"android":{mode,transport,reason},"ios":{...},"registry":{store,location},
        "webPush":{mode,enabled,subject,allowPrivateEndpoints,vapidKeys},"settings":{key:{value,source}},"diagnostics":[...]};
        vapidKeys is present, absent (created on first use) or unusable; the private key is never shown.
        Exit 0 when the configuration was resolved (diagnostics included), 1 when settings.json is unusable.
        """

    static func run(_ arguments: [String], dataDirectory: String?) throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            return ExitCode.success.rawValue
        }
        let args = try ParsedArguments(arguments, valueFlags: [], switchFlags: ["json", "no-persist"])
        try args.rejectPositionals()
        let configuration = try load(dataDirectory: dataDirectory, persist: !args.has("no-persist"))
        if args.has("json") {
            print(Terminal.json(configuration.jsonValue))
            return ExitCode.success.rawValue
        }
        // Values come from the environment and settings.json: every one is escaped.
        let android = configuration.android
        let ios = configuration.ios
        print("Android (phone, wear): \(android.transport.name)   mode \(Terminal.line(android.mode)): \(Terminal.line(android.reason))")
        print("iOS:                   \(ios.transport.name)   mode \(Terminal.line(ios.mode)): \(Terminal.line(ios.reason))")
        print("Registry:              \(configuration.registry.name)   \(Terminal.line(configuration.registry.location))")
        let web = configuration.webPush
        print(
            "Web Push:              \(web.isEnabled ? "on" : "off")   mode \(Terminal.line(web.mode)), subject \(Terminal.line(web.subject)), VAPID pair \(web.vapidKeys)"
                + (web.allowsPrivateEndpoints ? ", private endpoints allowed" : ""))
        // Which proxy each endpoint's requests take, or `direct` and why (password as ***).
        for (endpoint, route) in configuration.egress() {
            print(pad("Egress \(endpoint):", 22) + " " + Terminal.line(route))
        }
        print("")
        print("SETTING                ENVIRONMENT               SOURCE   VALUE")
        for setting in PushSetting.all {
            let resolved = configuration.settings[setting.settingsKey]
            print(
                pad(setting.settingsKey, 22) + " " + pad(setting.environmentVariable, 25) + " " + pad(resolved?.source.rawValue ?? "-", 8) + " "
                    + (configuration.shownValue(setting).map { Terminal.line($0) } ?? "(unset)"))
        }
        if !configuration.persistedKeys.isEmpty {
            print("\nsaved to settings.json on first sight: \(configuration.persistedKeys.joined(separator: ", "))")
        }
        if !configuration.diagnostics.isEmpty {
            print("\nDiagnostics:")
            for diagnostic in configuration.diagnostics { print("  " + Terminal.line(diagnostic.description)) }
        }
        return ExitCode.success.rawValue
    }

    static func load(dataDirectory: String?, persist: Bool) throws -> PushConfiguration {
        do {
            return try PushConfiguration.load(
                environment: ProcessInfo.processInfo.environment, dataDirectory: dataDirectory, persist: persist)
        } catch {
            throw CommandFailure(error.message)
        }
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}
