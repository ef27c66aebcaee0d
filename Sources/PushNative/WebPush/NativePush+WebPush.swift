import DeviceRegistry
import PushEnvelope
import PushHTTP
import PushProviders
import PushTransports

/// The Web Push channel a `NativePush` holds: the VAPID identity, its own HTTP client (with the
/// address policy: endpoints are chosen by browsers), the subscriptions' store, or why it is off.
struct WebPushChannel: Sendable {
    let routes: PushWebSubscriptions?
    let store: (any PushWebSubscriptionStore)?
    let transport: WebPushTransport?
    /// Why Web Push is off, when it is.
    let offReason: String?
    /// RFC 8030 `Topic` (from the tag) and `Urgency` on every message (`HAPI_WEB_PUSH_TOPIC_URGENCY`).
    var sendsTopicAndUrgency = true

    static func make(
        configuration: PushConfiguration, store: any PushDeviceStore, runtime: NativePush.Configuration, dataDirectory: String?,
        client: HTTPClient, logger: any PushLogger = SilentPushLogger(), metrics: (any PushMetricsFactory)? = nil
    ) -> WebPushChannel {
        guard let subscriptions = store as? any PushWebSubscriptionStore else {
            return WebPushChannel(routes: nil, store: nil, transport: nil, offReason: "the device store keeps no Web Push subscriptions")
        }
        guard let dataDirectory else {
            return WebPushChannel(routes: nil, store: subscriptions, transport: nil, offReason: "no data directory for the VAPID keys")
        }
        let loaded = VAPIDKeyFile.loadOrCreate(SettingsFile(directory: dataDirectory))
        guard let keyPair = loaded.keyPair else {
            return WebPushChannel(routes: nil, store: subscriptions, transport: nil, offReason: loaded.warning ?? "no VAPID key pair")
        }
        let routes = PushWebSubscriptions(store: subscriptions, vapidPublicKey: Base64.urlEncodeUnpadded(keyPair.publicKey))
        guard configuration.webPush.isEnabled else {
            return WebPushChannel(routes: routes, store: subscriptions, transport: nil, offReason: "Web Push is off (\(configuration.webPush))")
        }
        let vapid = WebPushVAPID(keyPair: keyPair, subject: configuration.webPush.subject)
        // Kept by a key rotation: tried when the push service refuses the current pair.
        let previous = loaded.previous.map { WebPushVAPID(keyPair: $0, subject: configuration.webPush.subject) }
        let transport = WebPushTransport(
            client: client, vapid: vapid, previousVAPIDs: previous,
            addressPolicy: configuration.webPush.allowsPrivateEndpoints ? .any : .publicOnly, retryPolicy: runtime.retry, logger: logger,
            concurrency: runtime.concurrency.webPush, metrics: metrics)
        return WebPushChannel(
            routes: routes, store: subscriptions, transport: transport, offReason: nil,
            sendsTopicAndUrgency: configuration.webPush.sendsTopicAndUrgency)
    }
}

extension NativePush {
    /// Sends one notification the way the JavaScript hub's `NotificationHub` does (web-push.md
    /// §1): the native channels first; then, only if no native delivery was `sent` and the hub's
    /// `webClientVisible` hook does not say a web client of the namespace is in the foreground
    /// (the hub toasts it instead), Web Push to every subscription of the namespace.
    ///
    /// - Parameters:
    ///   - webPayload: the Web Push payload (`PushNotificationComposer.webReady(for:)`…); nil
    ///     sends none (Web Push `disabled` for this notification).
    ///   - webClientVisible: the hub's answer to "is a web client of this namespace visible now?".
    public func send(
        _ payload: PushNotificationPayload, webPayload: PushWebPayload?, namespace: String,
        webClientVisible: @Sendable (String) async -> Bool = { _ in false }
    ) async throws -> PushNotificationReport {
        let native = try await dispatch(payload, namespace: namespace)
        let web = try await sendWebPush(webPayload, namespace: namespace, nativeSent: native.suppressWebPush, webClientVisible: webClientVisible)
        return PushNotificationReport(native: native, webPush: web)
    }

    /// The Web Push half of `send`, for a hub that dispatched natively itself.
    public func sendWebPush(
        _ payload: PushWebPayload?, namespace: String, nativeSent: Bool, webClientVisible: @Sendable (String) async -> Bool = { _ in false }
    ) async throws -> PushWebPushReport {
        guard let payload, let transport = webPushChannel.transport, let store = webPushChannel.store else {
            return PushWebPushReport(decision: .disabled)
        }
        if nativeSent { return PushWebPushReport(decision: .nativeSent) }
        if await webClientVisible(namespace) { return PushWebPushReport(decision: .webClientVisible) }
        let subscriptions = try await store.webSubscriptions(namespace: namespace)
        guard !subscriptions.isEmpty else { return PushWebPushReport(decision: .noSubscriptions) }
        let targets = subscriptions.map {
            WebPushTransport.Target(endpoint: $0.endpoint, p256dh: $0.p256dh, auth: $0.auth, previousVAPIDPublicKey: $0.previousVAPIDPublicKey)
        }
        let headers: WebPushProvider.MessageHeaders =
            webPushChannel.sendsTopicAndUrgency ? WebPushProvider.messageHeaders(tag: payload.tag, type: payload.type) : .none
        let results = await transport.send(Array(payload.json.utf8), to: targets, headers: headers)
        // The transport's pipeline has logged each delivery as it ended, as a native one is
        // (the endpoint's fingerprint for a token hash); the prune and the metrics are the
        // dispatcher's too.
        let reporter = dispatcher.reporter
        var deliveries: [PushWebPushReport.Delivery] = []
        for (subscription, result) in zip(subscriptions, results) {
            let fingerprint = subscription.fingerprint
            var removed = false
            var pruneFailure: String?
            if result.outcome == .invalid {
                // The endpoint is a capability: redacted from whatever the store says.
                let secrets =
                    [subscription.endpoint] + (PushWebEndpoint.parse(subscription.endpoint).map { [$0.pathAndQuery] } ?? [])
                    + [subscription.p256dh, subscription.auth]
                (removed, pruneFailure) = await reporter.prune(
                    result, transport: .webpush, platform: WebPushTransport.platform, tokenHash: fingerprint, secrets: secrets
                ) { try await store.removeWebSubscription(namespace: namespace, endpoint: subscription.endpoint) }
            }
            reporter.delivered(result, transport: .webpush)
            let previousKey = result.vapidPublicKey == transport.vapidPublicKey ? nil : result.vapidPublicKey
            if result.outcome == .sent, previousKey != subscription.previousVAPIDPublicKey {
                // Which pair reaches this browser, for the next push and for `webpush list`.
                try? await store.rememberWebSubscriptionVAPIDKey(namespace: namespace, endpoint: subscription.endpoint, previousPublicKey: previousKey)
            }
            deliveries.append(
                PushWebPushReport.Delivery(
                    origin: subscription.origin, fingerprint: fingerprint, outcome: result.outcome, reason: result.reason,
                    detail: result.detail, status: result.status, removed: removed, previousVAPIDPublicKey: previousKey, pruneFailure: pruneFailure))
        }
        return PushWebPushReport(decision: .sent, deliveries: deliveries)
    }

    /// Why Web Push is off for this instance, or nil when it is on.
    public var webPushOffReason: String? { webPushChannel.offReason }
}
