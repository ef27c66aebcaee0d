/// The three kinds of native device a hub can reach.
public enum PushDevicePlatform: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// An Android phone: direct FCM (plaintext) or the relay (encrypted, needs a push key).
    case phone
    /// A Wear OS watch: direct FCM only.
    case wear
    /// An iPhone: the relay or direct APNs, always encrypted.
    case ios

    public var description: String { rawValue }
}

extension PushDevicePlatform {
    /// The platform a stored column names, read from its bytes without making a String; nil for
    /// anything else (a row another program wrote that we cannot reach).
    package init?(storedBytes bytes: UnsafeBufferPointer<UInt8>) {
        switch bytes.count {
        case 3 where bytes[0] == 0x69 && bytes[1] == 0x6F && bytes[2] == 0x73: self = .ios  // "ios"
        case 4 where bytes[0] == 0x77 && bytes[1] == 0x65 && bytes[2] == 0x61 && bytes[3] == 0x72: self = .wear  // "wear"
        case 5 where bytes[0] == 0x70 && bytes[1] == 0x68 && bytes[2] == 0x6F && bytes[3] == 0x6E && bytes[4] == 0x65: self = .phone  // "phone"
        default: return nil
        }
    }
}
