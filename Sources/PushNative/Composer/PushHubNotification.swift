public import PushEnvelope

/// What happened in a session that the hub notifies about: the three events of the JavaScript
/// hub's `NotificationHub` (js-hub-behaviour.md §4), as the hub hands them to us.
public enum PushHubEvent: Sendable, Hashable {
    /// The agent finished its turn; `messages` are the session's stored message contents, oldest first.
    case ready(PushSession, messages: [PushJSONValue])
    /// The permission debounce fired for the session's pending requests.
    case pendingRequest(PushSession)
    /// A `message-received` content arrived that may carry a task notification.
    case taskNotification(PushSession, content: PushJSONValue)
}

/// One notification composed for both channels from the same decisions (which event, whether the
/// first pending request is a question, whether a task failed): the native payload and the Web
/// Push payload, so a hub composes once and hands this to `NativePush.send(_:namespace:)`.
public struct PushHubNotification: Sendable, Hashable {
    /// What the native channels (relay, APNs, FCM) carry, encrypted per device.
    public let payload: PushNotificationPayload
    /// What Web Push carries (shorter texts, a per-session tag).
    public let webPayload: PushWebPayload

    public init(payload: PushNotificationPayload, webPayload: PushWebPayload) {
        self.payload = payload
        self.webPayload = webPayload
    }
}

extension PushNotificationComposer {
    /// Both payloads of `event`, or nil when it calls for no notification: a content with no task
    /// notification, or a permission debounce with nothing pending (on both channels: the native
    /// composer's deliberate difference from the JavaScript hub, which sends an empty
    /// "Permission Request", docs/wire.md). The older per-channel calls (`ready(for:messages:)`
    /// with `webReady(for:)`, and so on) stay for a release; prefer this one.
    public static func compose(_ event: PushHubEvent) -> PushHubNotification? {
        switch event {
        case .ready(let session, let messages):
            return PushHubNotification(payload: ready(for: session, messages: messages), webPayload: webReady(for: session))
        case .pendingRequest(let session):
            guard let payload = pendingRequest(for: session) else { return nil }
            return PushHubNotification(payload: payload, webPayload: webPendingRequest(for: session))
        case .taskNotification(let session, let content):
            guard let payload = taskNotification(for: session, content: content),
                let web = webTaskNotification(for: session, content: content)
            else { return nil }
            return PushHubNotification(payload: payload, webPayload: web)
        }
    }
}
