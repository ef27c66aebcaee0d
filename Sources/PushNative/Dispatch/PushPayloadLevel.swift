/// Which rung of the size ladder a delivery was sent with: the full payload, the payload
/// without `notifySummary`, or the minimal `HAPI / New activity` notification.
public enum PushPayloadLevel: String, Sendable, Hashable {
    case full
    case withoutSummary = "without_summary"
    case minimal
}
