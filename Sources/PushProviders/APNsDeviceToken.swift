/// The one APNs device-token rule, used by the hub (registration and sending) and the relay:
/// an even number of hex digits (either case), 16 to 512 of them, as the official relay checks.
/// Today's tokens are 64 digits; Apple says they may grow, and 512 bounds the request path
/// (`/3/device/<token>`) a token becomes.
package enum APNsDeviceToken {
    package static let minimumDigits = 16
    package static let maximumDigits = 512

    /// What is wrong with a token, in the order the rule is checked.
    package enum Flaw: Equatable, Sendable {
        /// A byte that is not 0-9, a-f or A-F.
        case notHex
        /// An odd number of digits (a token is whole bytes).
        case oddLength(Int)
        /// Fewer than 16 or more than 512 digits (`""` included).
        case outOfRange(Int)
    }

    /// Nil for a token the rule accepts.
    package static func flaw(_ token: String) -> Flaw? {
        let utf8 = token.utf8
        let count = utf8.count
        // Read in place where the string is contiguous (checked for every request sent).
        let hex = utf8.withContiguousStorageIfAvailable { $0.allSatisfy(isHexDigit) } ?? utf8.allSatisfy(isHexDigit)
        guard hex else { return .notHex }
        guard count % 2 == 0 else { return .oddLength(count) }
        guard count >= minimumDigits, count <= maximumDigits else { return .outOfRange(count) }
        return nil
    }

    package static func isWellFormed(_ token: String) -> Bool { flaw(token) == nil }

    package static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) || (byte >= 0x41 && byte <= 0x46)
    }
}

/// The one `apns-collapse-id` cut, used by the hub's APNs requests, its relay requests and the
/// relay: at most 64 UTF-8 bytes (Apple's limit), cut on a Unicode scalar boundary, as the
/// official relay cuts (so a grapheme cluster at the boundary may lose its last scalars; the
/// id is a key, never shown).
package enum APNsCollapseId {
    package static let maximumBytes = 64

    package static func cut(_ value: String) -> String {
        guard value.utf8.count > maximumBytes else { return value }
        var scalars = String.UnicodeScalarView()
        var bytes = 0
        for scalar in value.unicodeScalars {
            let size = UTF8.width(scalar)
            if bytes + size > maximumBytes { break }
            scalars.append(scalar)
            bytes += size
        }
        return String(scalars)
    }
}
