public import PushEnvelope
public import DeviceRegistry
public import PushTransports
import PushHTTP
import Foundation

/// The whole library in one object, for a hub to embed in a few lines:
///
/// ```swift
/// let push = try await NativePush.start()                 // environment + ~/.hapi
/// let answer = await push.register(namespace: ns, body: requestBody)   // POST /api/devices/register
/// let report = try await push.dispatch(payload, namespace: ns)
/// if !report.suppressWebPush { sendWebPush() }
/// await push.shutdown()
/// ```
///
/// Long-lived connections, the APNs provider token and the FCM access token are shared by
/// every dispatch until `shutdown()`.
public final class NativePush: Sendable {
    public let configuration: PushConfiguration
    public let registry: PushDeviceRegistry
    /// Timeouts, limits, concurrency and retries this instance runs with.
    public let runtime: Configuration
    package let dispatcher: PushDispatcher
    /// The one HTTP client of every channel, Web Push included.
    let client: HTTPClient
    /// The Web Push routes' handlers (`GET /push/vapid-public-key`, `POST`/`DELETE
    /// /push/subscribe`); nil when the store keeps no subscriptions or no VAPID pair is usable.
    public let webPush: PushWebSubscriptions?
    let webPushChannel: WebPushChannel

    /// Reads the configuration (environment > `settings.json` > defaults), opens the registry
    /// (PostgreSQL when `HAPI_PUSH_DATABASE_URL` is set, else SQLite in the data directory) and
    /// builds the configured transports. The store opens on threads of its own, so a busy
    /// database or a slow server suspends the caller instead of blocking its thread.
    ///
    /// - Parameters:
    ///   - environment: the process environment by default.
    ///   - dataDirectory: `$HAPI_HOME`, else `~/.hapi`, by default.
    ///   - persistSettings: write first-sight environment values into settings.json.
    ///   - runtime: timeouts, connection limits, concurrency, retries; checked before anything opens.
    ///   - logger: one record per push; silent by default.
    ///   - metrics: deliveries, latency and in-flight counts; none by default.
    public static func start(
        environment: [String: String] = NativePush.processEnvironment, dataDirectory: String? = nil,
        persistSettings: Bool = true, runtime: Configuration = Configuration(), logger: any PushLogger = SilentPushLogger(),
        metrics: (any PushMetricsFactory)? = nil
    ) async throws -> NativePush {
        try runtime.validate()
        guard let directory = dataDirectory ?? HubDataDirectory.resolve(environment: environment) else {
            throw NativePushError(message: "no data directory: set HAPI_HOME or HOME, or pass dataDirectory")
        }
        let configuration = try PushConfiguration.load(environment: environment, dataDirectory: directory, persist: persistSettings)
        let store = try await configuration.registry.open()
        return try NativePush(
            configuration: configuration, store: store, runtime: runtime, logger: logger, metrics: metrics, dataDirectory: directory)
    }

    /// This process's environment variables.
    public static var processEnvironment: [String: String] { ProcessInfo.processInfo.environment }

    /// Builds from a configuration and any store (a hub with its own database passes its own).
    /// Throws `NativePushError` when `runtime` does not validate.
    ///
    /// - Parameter dataDirectory: where settings.json keeps the VAPID pair (created on first
    ///   use); without it, and with a store that keeps no Web Push subscriptions, Web Push is off.
    public init(
        configuration: PushConfiguration, store: any PushDeviceStore, runtime: Configuration = Configuration(),
        logger: any PushLogger = SilentPushLogger(), metrics: (any PushMetricsFactory)? = nil, dataDirectory: String? = nil
    ) throws {
        try runtime.validate()
        let client = try HTTPClient(configuration: runtime.httpClientConfiguration(caFile: configuration.caFile, settings: configuration))
        let retryPolicy = runtime.retry
        self.client = client
        self.runtime = runtime
        self.configuration = configuration
        self.registry = PushDeviceRegistry(store: store)
        let relay = RelayTransport(
            baseURL: configuration.relayURL, client: client, retryPolicy: retryPolicy, logger: logger, concurrency: runtime.concurrency.relay, metrics: metrics)
        let ios: PushDispatcher.IOSChannel
        switch configuration.ios.transport {
        case .relay: ios = .encrypted(relay)
        case .apns(let credentials, _):
            ios = .encrypted(
                APNsTransport(
                    endpoint: configuration.apnsEndpoint, credentials: credentials, client: client, retryPolicy: retryPolicy, logger: logger,
                    concurrency: runtime.concurrency.apns, metrics: metrics))
        case .off: ios = .off(reason: configuration.ios.reason)
        }
        let android: PushDispatcher.AndroidChannel
        switch configuration.android.transport {
        case .relay: android = .encrypted(relay)
        case .fcm(let account):
            android = .plaintext(
                FCMTransport(
                    endpoint: configuration.fcmEndpoint, account: account, client: client, retryPolicy: retryPolicy, logger: logger,
                    concurrency: runtime.concurrency.fcm, metrics: metrics))
        case .off: android = .off(reason: configuration.android.reason)
        }
        self.dispatcher = PushDispatcher(
            store: store, ios: ios, android: android, logger: logger, metrics: metrics, window: runtime.dispatchWindow)
        // The same client (its threads, its connections per origin and address policy) as the
        // native channels: each Web Push request carries its own policy.
        let channel = WebPushChannel.make(
            configuration: configuration, store: store, runtime: runtime, dataDirectory: dataDirectory, client: client, logger: logger,
            metrics: metrics)
        self.webPushChannel = channel
        self.webPush = channel.routes
    }

    /// `POST /api/devices/register`: the answer to send back.
    public func register(namespace: String, body: [UInt8]) async -> PushDeviceRegistry.Answer {
        await registry.handleRegister(namespace: namespace, body: body)
    }

    /// `DELETE /api/devices/register`: the answer to send back.
    public func unregister(namespace: String, body: [UInt8]) async -> PushDeviceRegistry.Answer {
        await registry.handleUnregister(namespace: namespace, body: body)
    }

    /// Sends `payload` to every native device of `namespace`. Suppress Web Push for this event
    /// when `report.suppressWebPush` is true.
    public func dispatch(_ payload: PushNotificationPayload, namespace: String) async throws -> PushDispatchReport {
        try await dispatcher.dispatch(payload, namespace: namespace)
    }

    /// Closes connections; in-flight sends fail as `shutdown`.
    public func shutdown() async {
        await client.shutdown()
    }
}

/// Why `NativePush.start` could not begin.
public struct NativePushError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
