import Foundation
import PushEnvelope
import PushNative

/// `hapi-push webpush subscribe|unsubscribe|list|vapid-public-key|rotate-vapid-keys`: the Web Push routes and
/// subscriptions by hand. Never prints an endpoint (a capability URL) or a key: an endpoint
/// appears as its origin and the first 12 hex digits of its SHA-256.
enum WebPushCommand {
    static let usage = """
        Usage:
          hapi-push [--data-dir DIR] webpush subscribe --namespace NS --request FILE|-
          hapi-push [--data-dir DIR] webpush unsubscribe --namespace NS --request FILE|-
          hapi-push [--data-dir DIR] webpush list --namespace NS [--json]
          hapi-push [--data-dir DIR] webpush vapid-public-key
          hapi-push [--data-dir DIR] webpush rotate-vapid-keys [--drop-old] [--json]

        subscribe and unsubscribe feed a raw request body (a file, or - for standard input) to the same handler as
        POST and DELETE /api/push/subscribe for NS and print the answer's body: {"ok":true} (exit 0) or
        {"error":"Invalid body"} (exit 2). list prints one subscription per line, newest first: the endpoint's
        origin, a 12-hex SHA-256 fingerprint of the endpoint, createdAt and, after a key rotation, the previous VAPID
        public key the browser still needs (--json: an array of {origin, fingerprint, createdAt, previousVapidPublicKey},
        the last null when the current key reaches it); never the endpoint or the browser's keys. vapid-public-key prints
        {"publicKey":"…"}, creating and saving the VAPID pair in DIR/settings.json on first use, as the hub does.
        rotate-vapid-keys makes a new pair the one vapid-public-key serves (new subscriptions use it; a running hub
        takes it at its next start) and keeps the replaced pair in settings.json "previousVapidKeys" (at most 4):
        a push the push service refuses (401/403) for the current key is sent once more with each kept key, and the
        key that worked is remembered for that subscription (list shows it) until the browser subscribes again.
        It prints the new public key and the kept ones (--json: {"publicKey":"…","previousPublicKeys":[…]}).
        --drop-old ends the grace: the kept pairs and what was remembered are removed (--json: {"dropped":[…]}).
        """

    static func run(_ arguments: [String], dataDirectory: String?) async throws -> Int32 {
        guard let (sub, rest) = try splitSubcommand(arguments, usage: usage, command: "webpush") else { return ExitCode.success.rawValue }
        switch sub {
        case "subscribe", "unsubscribe":
            let args = try ParsedArguments(rest, valueFlags: ["namespace", "request"])
            try args.rejectPositionals()
            let namespace = try args.required("namespace")
            let body = try InputFile.read(try args.required("request"), option: "request")
            let routes = PushWebSubscriptions(store: try await store(dataDirectory), vapidPublicKey: "")
            let answer = sub == "subscribe" ? await routes.subscribe(namespace: namespace, body: body) : await routes.unsubscribe(namespace: namespace, body: body)
            print(Terminal.jsonText(answer.body))
            switch answer.status {
            case 200: return ExitCode.success.rawValue
            case 400: return ExitCode.usage.rawValue
            default: return ExitCode.failure.rawValue
            }
        case "list":
            let args = try ParsedArguments(rest, valueFlags: ["namespace"], switchFlags: ["json"])
            try args.rejectPositionals()
            let namespace = try args.required("namespace")
            let subscriptions = try await store(dataDirectory).webSubscriptions(namespace: namespace)
            if args.has("json") {
                print(Terminal.json(JSONValue.array(subscriptions.map { subscription in
                    .object([
                        (key: "origin", value: .string(subscription.origin)), (key: "fingerprint", value: .string(subscription.fingerprint)),
                        (key: "createdAt", value: .integer(subscription.createdAt)),
                        (key: "previousVapidPublicKey", value: subscription.previousVAPIDPublicKey.map { .string($0) } ?? .null),
                    ])
                })))
            } else if subscriptions.isEmpty {
                print("no Web Push subscriptions in namespace \(Terminal.line(namespace))")
            } else {
                for subscription in subscriptions {
                    let created = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(subscription.createdAt) / 1000))
                    let previous = subscription.previousVAPIDPublicKey.map { "  needs previous VAPID key \(Terminal.line($0))" } ?? ""
                    print("\(Terminal.line(subscription.origin))  \(subscription.fingerprint)  \(created)\(previous)")
                }
            }
            return ExitCode.success.rawValue
        case "vapid-public-key":
            let args = try ParsedArguments(rest, valueFlags: [])
            try args.rejectPositionals()
            let directory = try resolvedDirectory(dataDirectory)
            let loaded = VAPIDKeyFile.loadOrCreate(SettingsFile(directory: directory))
            if let warning = loaded.warning { printError(warning) }
            guard let pair = loaded.keyPair else { throw CommandFailure("no usable VAPID key pair") }
            print(JSONValue.object([(key: "publicKey", value: .string(Base64.urlEncodeUnpadded(pair.publicKey)))]).canonicalString)
            return ExitCode.success.rawValue
        case "rotate-vapid-keys":
            let args = try ParsedArguments(rest, valueFlags: [], switchFlags: ["drop-old", "json"])
            try args.rejectPositionals()
            let directory = try resolvedDirectory(dataDirectory)
            if args.has("drop-old") {
                let dropped = try await PushVAPIDKeyRotation.dropPrevious(dataDirectory: directory, store: try await store(dataDirectory))
                if args.has("json") {
                    print(Terminal.json(JSONValue.object([(key: "dropped", value: .array(dropped.map { .string($0) }))])))
                } else {
                    print(dropped.isEmpty ? "no previous VAPID key pairs were kept" : "dropped \(dropped.count) previous VAPID key pair(s): \(dropped.joined(separator: ", "))")
                }
                return ExitCode.success.rawValue
            }
            let rotation = try PushVAPIDKeyRotation.rotate(dataDirectory: directory)
            if args.has("json") {
                print(Terminal.json(JSONValue.object([
                    (key: "publicKey", value: .string(rotation.publicKey)),
                    (key: "previousPublicKeys", value: .array(rotation.previousPublicKeys.map { .string($0) })),
                ])))
            } else {
                print("new VAPID public key: \(rotation.publicKey)")
                if !rotation.previousPublicKeys.isEmpty {
                    print("kept for browsers not yet subscribed again: \(rotation.previousPublicKeys.joined(separator: ", "))")
                    print("restart the hub; when 'webpush list' shows no subscription needing a previous key, run 'webpush rotate-vapid-keys --drop-old'")
                }
            }
            return ExitCode.success.rawValue
        default:
            throw UsageError("unknown webpush command '\(sub)' (expected subscribe, unsubscribe, list, vapid-public-key or rotate-vapid-keys)")
        }
    }

    static func resolvedDirectory(_ dataDirectory: String?) throws -> String {
        guard let directory = dataDirectory ?? HubDataDirectory.resolve(environment: ProcessInfo.processInfo.environment) else {
            throw UsageError("no data directory: pass --data-dir DIR or set HAPI_HOME or HOME")
        }
        return directory
    }

    /// The registry's database, which keeps the subscriptions.
    static func store(_ dataDirectory: String?) async throws -> any PushWebSubscriptionStore {
        guard let store = try await DevicesCommand.openStore(dataDirectory) as? any PushWebSubscriptionStore else {
            throw CommandFailure("this registry keeps no Web Push subscriptions")
        }
        return store
    }
}
