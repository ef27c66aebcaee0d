/// The three kinds of native device a hub can reach.
public enum DevicePlatform: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// An Android phone: direct FCM (plaintext) or the relay (encrypted, needs a push key).
    case phone
    /// A Wear OS watch: direct FCM only.
    case wear
    /// An iPhone: the relay or direct APNs, always encrypted.
    case ios

    public var description: String { rawValue }
}
