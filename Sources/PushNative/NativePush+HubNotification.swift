extension NativePush {
    /// Sends one composed notification the JavaScript hub's way: native first, Web Push only when
    /// no native device got it and no web client of the namespace is visible (`send(_:webPayload:…)`).
    public func send(
        _ notification: PushHubNotification, namespace: String, webClientVisible: @Sendable (String) async -> Bool = { _ in false }
    ) async throws -> PushNotificationReport {
        try await send(notification.payload, webPayload: notification.webPayload, namespace: namespace, webClientVisible: webClientVisible)
    }

    /// Composes `event` for both channels and sends it; nil when the event calls for no
    /// notification (`PushNotificationComposer.compose(_:)`).
    public func send(
        _ event: PushHubEvent, namespace: String, webClientVisible: @Sendable (String) async -> Bool = { _ in false }
    ) async throws -> PushNotificationReport? {
        guard let notification = PushNotificationComposer.compose(event) else { return nil }
        return try await send(notification, namespace: namespace, webClientVisible: webClientVisible)
    }
}
