import DeviceRegistry
#if PostgreSQL
import DeviceRegistryPostgres
#endif
import Foundation
import PushEnvelope
import PushHTTP
import PushTransports

extension PushConfiguration {
    /// Resolves every setting (environment > settings.json > default), persists environment
    /// values whose keys the file lacks (unless `persist` is false), loads and checks the
    /// credentials, and chooses each platform's transport.
    ///
    /// Throws only when settings.json exists but cannot be used (it is never overwritten
    /// then); every other problem becomes a diagnostic and, where it matters, a disabled
    /// channel, never a silent fallback.
    ///
    /// - Parameters:
    ///   - environment: usually `ProcessInfo.processInfo.environment`.
    ///   - dataDirectory: where settings.json lives; nil resolves `$HAPI_HOME`, else `~/.hapi`.
    ///   - persist: write first-sight environment values into settings.json.
    public static func load(
        environment: [String: String], dataDirectory: String? = nil, persist: Bool = true
    ) throws(PushSettingsFileError) -> PushConfiguration {
        try load(environment: environment, dataDirectory: dataDirectory, persist: persist, postgres: includesPostgres)
    }

    /// Whether this build has the PostgreSQL registry: the package trait `PostgreSQL`, on by
    /// default. A hub that depends on this package with `traits: []` builds without libpq; then
    /// `HAPI_PUSH_DATABASE_URL` makes the registry unusable (`postgresNotBuilt`), never SQLite.
    public static var includesPostgres: Bool {
        #if PostgreSQL
        return true
        #else
        return false
        #endif
    }

    /// `load` as a build with (`postgres`) or without the PostgreSQL registry would do it, so
    /// the tests of a build with it also check what a build without it answers.
    static func load(
        environment: [String: String], dataDirectory: String?, persist: Bool, postgres: Bool
    ) throws(PushSettingsFileError) -> PushConfiguration {
        let directory = dataDirectory ?? HubDataDirectory.resolve(environment: environment)
        let file = directory.map { SettingsFile(directory: $0) }
        let stored = JSONValue.object(try file?.read() ?? [])  // members looked up exactly
        var diagnostics: [Diagnostic] = []
        var settings: [String: PushResolvedSetting] = [:]
        var firstSight: [String: String] = [:]

        for setting in PushSetting.all {
            let fromEnvironment = HubDataDirectory.nonEmpty(environment[setting.environmentVariable])
            var fromFile: String?
            if let member = stored[setting.settingsKey] {
                if let text = member.stringValue {
                    fromFile = HubDataDirectory.nonEmpty(text)
                } else if setting == .webPushAllowPrivateEndpoints, case .bool(let allowed) = member {
                    fromFile = allowed ? "1" : "0"
                } else if setting == .webPushTopicUrgency, case .bool(let on) = member {
                    fromFile = on ? "on" : "off"
                } else {
                    diagnostics.append(Diagnostic(
                        level: .warning, setting: setting.settingsKey,
                        message: "settings.json has \(member.typeName) for \"\(setting.settingsKey)\", expected a string: ignored"))
                }
            }
            let resolved: PushResolvedSetting
            if let fromEnvironment {
                resolved = PushResolvedSetting(value: fromEnvironment, source: .environment)
                if stored[setting.settingsKey] == nil {
                    if setting.isURL, HTTPBaseURL.hasPassword(fromEnvironment) {
                        // Refused below as well; a password is never copied into a file.
                        diagnostics.append(Diagnostic(
                            level: .info, setting: setting.settingsKey,
                            message: "\(setting.environmentVariable) holds a password, so it is not saved to settings.json"))
                    } else if setting == .httpsProxy, HTTPProxy.redact(fromEnvironment) != fromEnvironment {
                        // The proxy's password stays in the environment, never in a file.
                        diagnostics.append(Diagnostic(
                            level: .info, setting: setting.settingsKey,
                            message: "HAPI_PUSH_HTTPS_PROXY holds a password, so it is not saved to settings.json"))
                    } else if setting == .databaseURL, databaseURLHasPassword(fromEnvironment) {
                        // A password stays where the operator put it: never copied into a file.
                        diagnostics.append(Diagnostic(
                            level: .info, setting: setting.settingsKey,
                            message: "HAPI_PUSH_DATABASE_URL holds a password, so it is not saved to settings.json: pass it each time, or keep the password in ~/.pgpass or PGPASSWORD and the URL without it"))
                    } else {
                        firstSight[setting.settingsKey] = fromEnvironment
                    }
                }
            } else if let fromFile {
                resolved = PushResolvedSetting(value: fromFile, source: .file)
            } else {
                resolved = PushResolvedSetting(value: setting.defaultValue, source: .default)
            }
            let expanded = setting.isPath ? resolved.value.map { HubDataDirectory.expandTilde($0, environment: environment) } : resolved.value
            settings[setting.settingsKey] = PushResolvedSetting(value: expanded, source: resolved.source)
        }

        if let file, let warning = file.permissionWarning() {
            diagnostics.append(Diagnostic(level: .warning, setting: "settings.json", message: warning))
        }

        var persisted: [String] = []
        if persist, let file, !firstSight.isEmpty {
            do {
                persisted = try file.addMissing(firstSight)
            } catch where error == .unwritable {
                // The values are known: this run uses them; only remembering them failed.
                diagnostics.append(Diagnostic(
                    level: .warning, setting: "settings.json",
                    message: "\(error.message); \(firstSight.keys.sorted().joined(separator: ", ")) apply to this run but were not saved: pass them again next time, or make the data directory writable"))
            }
        }

        var builder = Selection(settings: settings, diagnostics: diagnostics, postgres: postgres)
        let relayURL = builder.relayURL()
        let android = builder.android(relayURL: relayURL)
        let ios = builder.ios(relayURL: relayURL)
        let registry = builder.registry(dataDirectory: directory)
        let webPush = PushWebPushSettings.resolve(
            mode: builder.value(.webPushMode), allowPrivate: builder.value(.webPushAllowPrivateEndpoints),
            topicUrgency: builder.value(.webPushTopicUrgency), subject: environment["VAPID_SUBJECT"], stored: stored["vapidKeys"], diagnostics: &builder.diagnostics)
        builder.checkProxy()
        return PushConfiguration(
            android: android, ios: ios, registry: registry, webPush: webPush, relayURL: relayURL ?? "",
            apnsEndpoint: builder.apnsEndpoint ?? "", fcmEndpoint: builder.fcmEndpoint(), caFile: builder.caFile(),
            settings: settings, diagnostics: builder.diagnostics, persistedKeys: persisted,
            proxyEnvironment: environment.filter { HTTPProxyConfiguration.variableNames.contains($0.key) })
    }

    /// Whether a database URL holds a password, which is never saved to settings.json: libpq's
    /// own reading when the build has it, else any part the printed form hides.
    static func databaseURLHasPassword(_ url: String) -> Bool {
        #if PostgreSQL
        return (try? PostgresPushDeviceStore.Configuration(url: url))?.hasPassword ?? false
        #else
        return url.contains("://") && DatabaseURLRedaction.redact(url) != url
        #endif
    }

    /// The decisions, one function per channel, each adding the diagnostics it owes.
    private struct Selection {
        let settings: [String: PushResolvedSetting]
        var diagnostics: [Diagnostic]
        var apnsEndpoint: String?
        /// Whether `HAPI_PUSH_DATABASE_URL` can be honoured (see `includesPostgres`).
        let postgres: Bool

        init(settings: [String: PushResolvedSetting], diagnostics: [Diagnostic], postgres: Bool) {
            self.settings = settings
            self.diagnostics = diagnostics
            self.postgres = postgres
        }

        func value(_ setting: PushSetting) -> String? { settings[setting.settingsKey]?.value }

        mutating func report(_ level: Diagnostic.Level, _ setting: PushSetting, _ message: String) {
            diagnostics.append(Diagnostic(level: level, setting: setting.settingsKey, message: message))
        }

        /// A base URL by `HTTPBaseURL`'s rules (https, or http only to loopback; no query,
        /// fragment or user info; a valid port); nil (and a diagnostic) otherwise. Trailing
        /// slashes dropped.
        mutating func validatedURL(_ setting: PushSetting) -> String? {
            guard let text = value(setting) else { return nil }
            do {
                return try HTTPBaseURL(text, cleartext: .loopbackOnly).text
            } catch {
                let shown = HTTPBaseURL.redactingPassword(text)
                report(.error, setting, "\(setting.environmentVariable) \(error.message), got \"\(shown)\"")
                return nil
            }
        }

        mutating func relayURL() -> String? { validatedURL(.relayURL) }

        mutating func fcmEndpoint() -> String { validatedURL(.fcmEndpoint) ?? PushSetting.fcmEndpoint.defaultValue ?? "" }

        /// An unusable proxy URL is reported, not dropped: requests then fail rather than
        /// bypass the proxy the operator asked for.
        mutating func checkProxy() {
            guard let url = value(.httpsProxy), !url.trimmingCharacters(in: .whitespaces).isEmpty else { return }
            do {
                _ = try HTTPProxy(url: url)
            } catch {
                report(.error, .httpsProxy, "HAPI_PUSH_HTTPS_PROXY \(error.detail ?? "is not a proxy URL"): every request fails until it is fixed")
            }
        }

        mutating func caFile() -> String? {
            guard let path = value(.caFile) else { return nil }
            // The client's own check, so a file the client would refuse is ignored here instead
            // of bringing every channel down.
            do {
                _ = try HTTPTrustRoots.readAdditionalCAFile(path)
            } catch {
                report(.error, .caFile, "HAPI_PUSH_CA_FILE \(error.detail ?? path): ignored, only the system trust store is used, so TLS to a server signed by that CA will fail")
                return nil
            }
            return path
        }

        /// PostgreSQL when `HAPI_PUSH_DATABASE_URL` is set and valid, SQLite in the data directory
        /// when it is unset; an invalid URL is an error, never a silent fall back to SQLite (that
        /// would split the registry in two).
        mutating func registry(dataDirectory: String?) -> RegistryStore {
            guard let url = value(.databaseURL) else {
                guard let dataDirectory else {
                    return .unusable(PushDeviceStoreError.cannotOpen.with("no data directory for the SQLite registry: set HAPI_HOME or HOME"))
                }
                return .sqlite(path: SQLitePushDeviceStore.Configuration(directory: dataDirectory).path)
            }
            #if PostgreSQL
            if postgres {
                do {
                    return .postgres(try PostgresPushDeviceStore.Configuration(url: url))
                } catch {
                    report(.error, .databaseURL, "\(error.message); the device registry cannot be opened")
                    return .unusable(error.with("HAPI_PUSH_DATABASE_URL: \(error.message)"))
                }
            }
            #endif
            let message =
                "HAPI_PUSH_DATABASE_URL is set (\(DatabaseURLRedaction.redact(url))) but this build has no PostgreSQL registry (the package trait PostgreSQL is off): "
                + "build with the trait (the default), or unset HAPI_PUSH_DATABASE_URL to use SQLite in the data directory"
            report(.error, .databaseURL, message + "; the device registry cannot be opened")
            return .unusable(PushDeviceStoreError.postgresNotBuilt.with(message))
        }

        mutating func android(relayURL: String?) -> Channel<AndroidTransport> {
            let mode = (value(.androidPushMode) ?? "auto").lowercased()
            let accountPath = value(.fcmServiceAccountPath)
            func relay(_ why: String) -> Channel<AndroidTransport> {
                guard relayURL != nil else {
                    return Channel(mode: mode, transport: .off, reason: "relay URL is invalid (see HAPI_PUSH_RELAY_URL)")
                }
                return Channel(mode: mode, transport: .relay, reason: why)
            }
            switch mode {
            case "off":
                return Channel(mode: mode, transport: .off, reason: "HAPI_ANDROID_PUSH=off")
            case "relay":
                if accountPath != nil {
                    report(.info, .fcmServiceAccountPath, "FCM_SERVICE_ACCOUNT_PATH is ignored because HAPI_ANDROID_PUSH=relay")
                }
                return relay("HAPI_ANDROID_PUSH=relay")
            case "auto", "fcm":
                guard let accountPath else {
                    if mode == "fcm" {
                        report(.error, .fcmServiceAccountPath,
                            "HAPI_ANDROID_PUSH=fcm requires FCM_SERVICE_ACCOUNT_PATH (settings.json \"fcmServiceAccountPath\"): Android push is off")
                        return Channel(mode: mode, transport: .off, reason: "no service account configured")
                    }
                    return relay("HAPI_ANDROID_PUSH=auto and no FCM service account: the official relay")
                }
                do {
                    let account = try FCMServiceAccount(contentsOfFile: accountPath)
                    return Channel(mode: mode, transport: .fcm(account), reason: "direct FCM to project \(account.projectId)")
                } catch {
                    // Never fall back to the relay: that would send private-project tokens to
                    // the official project.
                    report(.error, .fcmServiceAccountPath, "\(error.message); Android push is off (no fallback to the relay)")
                    return Channel(mode: mode, transport: .off, reason: "the configured FCM service account is unusable")
                }
            default:
                report(.error, .androidPushMode,
                    "HAPI_ANDROID_PUSH=\"\(mode)\" is not a mode: use auto, relay, fcm or off; Android push is off")
                return Channel(mode: mode, transport: .off, reason: "unknown mode")
            }
        }

        mutating func ios(relayURL: String?) -> Channel<IOSTransport> {
            let mode = (value(.iosPushMode) ?? "relay").lowercased()
            switch mode {
            case "off":
                return Channel(mode: mode, transport: .off, reason: "HAPI_IOS_PUSH=off")
            case "relay":
                guard relayURL != nil else {
                    return Channel(mode: mode, transport: .off, reason: "relay URL is invalid (see HAPI_PUSH_RELAY_URL)")
                }
                return Channel(mode: mode, transport: .relay, reason: "HAPI_IOS_PUSH=relay")
            case "apns":
                return apns(mode: mode)
            default:
                report(.error, .iosPushMode, "HAPI_IOS_PUSH=\"\(mode)\" is not a mode: use relay, apns or off; iOS push is off")
                return Channel(mode: mode, transport: .off, reason: "unknown mode")
            }
        }

        private mutating func apns(mode: String) -> Channel<IOSTransport> {
            let required: [PushSetting] = [.apnsKeyPath, .apnsKeyId, .apnsTeamId, .apnsBundleId]
            let missing = required.filter { value($0) == nil }
            for setting in missing {
                report(.error, setting, "HAPI_IOS_PUSH=apns requires \(setting.environmentVariable) (settings.json \"\(setting.settingsKey)\")")
            }
            let environmentText = (value(.apnsEnvironment) ?? "production").lowercased()
            let environment = APNsEnvironment(rawValue: environmentText)
            if environment == nil {
                // Never guess: a sandbox token sent to production answers BadDeviceToken and
                // would prune a live device.
                report(.error, .apnsEnvironment, "APNS_ENV=\"\(environmentText)\" must be production or sandbox; iOS push is off")
            }
            guard missing.isEmpty, let environment, let keyPath = value(.apnsKeyPath), let keyId = value(.apnsKeyId),
                let teamId = value(.apnsTeamId), let bundleId = value(.apnsBundleId)
            else {
                return Channel(mode: mode, transport: .off, reason: "direct APNs is not fully configured")
            }
            if value(.apnsEndpoint) != nil {
                guard let endpoint = validatedURL(.apnsEndpoint) else {
                    return Channel(mode: mode, transport: .off, reason: "APNs endpoint override is invalid")
                }
                apnsEndpoint = endpoint
            } else {
                apnsEndpoint = environment.endpoint
            }
            do {
                let credentials = try APNsCredentials(keyPath: keyPath, keyId: keyId, teamId: teamId, bundleId: bundleId)
                return Channel(
                    mode: mode, transport: .apns(credentials, environment: environment),
                    reason: "direct APNs (\(environment.rawValue)) for \(bundleId)")
            } catch {
                report(.error, .apnsKeyPath, "\(error.message); iOS push is off")
                return Channel(mode: mode, transport: .off, reason: "the APNs key is unusable")
            }
        }
    }
}
