import Foundation
import PushEnvelope
import PushNative

/// `hapi-push send`: one dispatch with the configured transports, as the hub would do it.
enum SendCommand {
    static let usage = """
        Usage: hapi-push [--data-dir DIR] send --namespace NS --type T --session-id ID [--session-name N] [--url U]
                         [--request-id R] [--title T] [--body B] [--severity S] [--notify-summary JSON] [--json]
                         [--web-push auto|off]

        Sends one notification to every registered device of NS over the transports configured by the
        environment and DIR/settings.json (see 'hapi-push config'), prunes tokens the provider declared
        dead, and prints one line per device and the Web Push decision. Options not given are what the
        JavaScript hub's composer writes for a session with that id and name: --url /sessions/<ID>, --session-name
        the first 8 characters of ID, --severity by type; for ready, permission-request and input-request also
        --title and --body (required for other types).
        --json prints {"suppressWebPush":…,"totals":{…},"deliveries":[{platform,deviceId,tokenHash,transport,
        outcome,reason,status,latencyMs,pruned,payload}]}; outcome is sent|invalid|failed|skipped and payload
        full|without_summary|minimal (null when nothing was sent).
        After the native deliveries, Web Push as the hub sends it (--web-push, default the configured HAPI_WEB_PUSH):
        only when no native device got it, to every subscription of NS, with {title, body, tag, data:{type,
        sessionId, url, requestId}} (tag <type>-<session-id>, none for task-notification). --json adds
        "webPush":{"decision":native_sent|web_client_visible|no_subscriptions|sent|disabled,"deliveries":[{endpoint,
        outcome,reason,status,previousVapidPublicKey}]}; endpoint is the origin and the endpoint's 12-hex fingerprint;
        previousVapidPublicKey the kept VAPID key that reached it after a key rotation (null: the current key).
        Exit 0 when the dispatch ran, whatever the outcomes; 1 when the registry or settings are unusable;
        2 for bad options.
        """

    static func run(_ arguments: [String], dataDirectory: String?) async throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            return ExitCode.success.rawValue
        }
        let args = try ParsedArguments(
            arguments,
            valueFlags: [
                "namespace", "type", "session-id", "session-name", "url", "request-id", "title", "body", "severity", "notify-summary", "web-push",
            ],
            switchFlags: ["json"])
        try args.rejectPositionals()
        let namespace = try args.required("namespace")
        let type = try args.required("type")
        let sessionId = try args.required("session-id")
        for (name, value) in [("namespace", namespace), ("type", type), ("session-id", sessionId)] where value.isEmpty {
            throw UsageError("--\(name) must not be empty")
        }
        var summary: String?
        if let text = args.value("notify-summary") {
            do {
                summary = try JSONParser.parse(text).canonicalString
            } catch {
                throw UsageError("--notify-summary must be JSON: \(error.description)")
            }
        }
        let composed = composedDefaults(type: PushNotificationType(rawValue: type), sessionId: sessionId, sessionName: args.value("session-name"))
        func text(_ flag: String, _ fallback: String?) throws(UsageError) -> String {
            if let value = args.value(flag) { return value }
            if let fallback { return fallback }
            return try args.required(flag)
        }
        let payload = PushNotificationPayload(
            type: PushNotificationType(rawValue: type), sessionId: sessionId, sessionName: args.value("session-name") ?? composed?.sessionName,
            url: args.value("url") ?? composed?.url ?? "/sessions/\(sessionId)", requestId: args.value("request-id"),
            title: try text("title", composed?.title), body: try text("body", composed?.body),
            severity: args.value("severity").map(PushNotificationSeverity.init(rawValue:)) ?? composed?.severity, notifySummary: summary)

        var environment = NativePush.processEnvironment
        if let mode = args.value("web-push") {
            guard mode == "auto" || mode == "off" else { throw UsageError("--web-push must be auto or off") }
            environment["HAPI_WEB_PUSH"] = mode
        }
        let webPayload = PushWebPayload(
            title: payload.title, body: payload.body, tag: payload.type == .taskNotification ? nil : "\(type)-\(sessionId)", type: type,
            sessionId: sessionId, url: payload.url, requestId: payload.requestId)
        let push: NativePush
        do {
            // Only what the operator set is saved: the --web-push override never is.
            push = try await NativePush.start(environment: environment, dataDirectory: dataDirectory, persistSettings: args.value("web-push") == nil)
        } catch let error as PushSettingsFileError {
            throw CommandFailure(error.message)
        } catch let error as PushDeviceStoreError {
            throw CommandFailure(error.message)
        } catch {
            throw CommandFailure("\(error)")
        }
        let report: PushDispatchReport
        let webReport: PushWebPushReport
        do {
            report = try await push.dispatch(payload, namespace: namespace)
            webReport = try await push.sendWebPush(webPayload, namespace: namespace, nativeSent: report.suppressWebPush)
        } catch {
            await push.shutdown()
            throw CommandFailure("cannot read the device registry: \(error)")
        }
        await push.shutdown()
        // What was refused or could not be saved: the operator should know, even when sending.
        for diagnostic in push.configuration.diagnostics where diagnostic.level != .info {
            printError("\(diagnostic.level.rawValue): \(diagnostic.setting): \(diagnostic.message)")
        }
        if args.has("json") {
            var members = report.jsonValue.objectValue ?? []
            members.append((key: "webPush", value: webReport.jsonValue))
            print(Terminal.json(.object(members)))
        } else {
            render(report, configuration: push.configuration) { print($0) }
            print("Web Push: \(webReport.decision)")
            for delivery in webReport.deliveries {
                var line = "  " + Terminal.line(delivery.endpoint) + "  " + delivery.outcome.rawValue
                if let status = delivery.status { line += " HTTP \(status)" }
                if let reason = delivery.reason { line += " (\(Terminal.line(reason.text(detail: delivery.detail))))" }
                if delivery.removed { line += " → removed" }
                print(line)
            }
        }
        return ExitCode.success.rawValue
    }

    /// What the JavaScript hub's composer sends for `type` about a session that has only an id
    /// and (with `--session-name`) a name: the defaults of every option not given. Nil for a
    /// task notification (its text is the task's summary: `--title` and `--body` are required)
    /// and for types the composer does not write.
    static func composedDefaults(type: PushNotificationType, sessionId: String, sessionName: String?) -> PushNotificationPayload? {
        let session = PushSession(id: sessionId, metadata: sessionName.map { ["name": .string($0)] } ?? .null)
        switch type {
        case .ready:
            return PushNotificationComposer.ready(for: session, messages: [])
        case .permissionRequest:
            return PushNotificationComposer.permissionRequest(for: session)
        case .inputRequest:
            var asking = session
            asking.agentState = ["requests": ["request": ["tool": "AskUserQuestion"]]]
            return PushNotificationComposer.pendingRequest(for: asking)
        default:
            return nil
        }
    }

    /// One line per device, then the decision.
    static func render(_ report: PushDispatchReport, configuration: PushConfiguration? = nil) -> String {
        var lines: [String] = []
        render(report, configuration: configuration) { lines.append($0) }
        return lines.joined(separator: "\n")
    }

    /// The same lines, handed out one at a time (a send to 100,000 devices prints as it goes
    /// instead of building one string).
    static func render(_ report: PushDispatchReport, configuration: PushConfiguration? = nil, line emit: (String) -> Void) {
        if let configuration {
            emit("transports: ios=\(configuration.ios.transport.name) android=\(configuration.android.transport.name)")
        }
        if report.deliveries.isEmpty { emit("no native devices registered in this namespace") }
        for delivery in report.deliveries {
            var line = "  " + pad(delivery.platform.rawValue, 6) + pad(Terminal.line(delivery.deviceId), 14) + " token " + delivery.tokenHash + "  "
                + pad(Terminal.line(delivery.transport.rawValue), 6) + pad(delivery.outcome.rawValue, 8)
            if let status = delivery.status { line += " HTTP \(status)" }
            if let reason = delivery.reasonText { line += " (\(Terminal.line(reason)))" }
            if let payload = delivery.payload, payload != .full { line += " payload=\(payload.rawValue)" }
            if delivery.pruned { line += " → pruned" }
            if delivery.outcome != .skipped { line += " \(delivery.latencyMilliseconds) ms" }
            emit(line)
        }
        emit(
            "sent \(report.count(.sent)), invalid \(report.count(.invalid)), failed \(report.count(.failed)), skipped \(report.count(.skipped)); "
                + (report.suppressWebPush ? "Web Push suppressed (a native device got it)" : "Web Push fires (no native device got it)"))
    }


    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}
