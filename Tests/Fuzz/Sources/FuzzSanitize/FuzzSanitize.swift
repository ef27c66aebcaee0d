import Foundation
import FuzzCheck
import PushProviders

/// Provider answers as a hostile provider (or a proxy) could write them: the first two bytes
/// are the status (big-endian), the rest the body. Besides not crashing: a reason kept from any
/// of the three classifiers holds no control or line-breaking character, is bounded, and never
/// holds a run of 16+ hex digits (a device token we sent) or a long token-like string.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let status = Int(data[0]) << 8 | Int(data[1])
    let body = Array(UnsafeBufferPointer(start: data + 2, count: size - 2))
    for (provider, result) in [
        ("relay", RelayProvider.parse(status: status, body: body)), ("APNs", APNsProvider.parse(status: status, body: body)),
        ("FCM", FCMProvider.parse(status: status, body: body)),
    ] {
        guard let reason = result.reasonText else { continue }
        check(reason, provider)
    }
    return 0
}

func check(_ reason: String, _ provider: String) {
    for scalar in reason.unicodeScalars {
        let value = scalar.value
        let control = value < 0x20 || (0x7F...0x9F).contains(value) || [0x2028, 0x2029, 0x200E, 0x200F, 0x061C].contains(value)
            || (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value)
        require(!control, "\(provider): control U+\(String(value, radix: 16)) in reason \(reason.debugDescription)")
    }
    // A code (64) and a message (200), each capped, with their separator and ellipses.
    require(reason.unicodeScalars.count <= 300, "\(provider): reason of \(reason.unicodeScalars.count) scalars")
    // Runs are judged on the text before escaping: an escape (`\x7F`) is a separator, not part
    // of a token. The reason and its detail are sanitized apart and joined by our own ": ",
    // which is no part of either (a 31-character code then `:` is not a token).
    let unescaped = withoutEscapes(reason).replacingOccurrences(of: ": ", with: "  ")
    var hexRun = 0
    var tokenRun = 0
    var digitInRun = false
    for scalar in unescaped.unicodeScalars {
        let hex = ("0"..."9").contains(scalar) || ("a"..."f").contains(scalar) || ("A"..."F").contains(scalar)
        hexRun = hex ? hexRun + 1 : 0
        require(hexRun < 16, "\(provider): a 16-hex-digit run survived in \(reason.debugDescription)")
        let tokenScalar = ("0"..."9").contains(scalar) || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || "_-.:~+/=".unicodeScalars.contains(scalar)
        if tokenScalar {
            tokenRun += 1
            if ("0"..."9").contains(scalar) { digitInRun = true }
        } else {
            tokenRun = 0
            digitInRun = false
        }
        require(!(tokenRun >= 32 && digitInRun), "\(provider): a token-like run survived in \(reason.debugDescription)")
    }
}

/// `text` with every escape the sanitizer writes (`\n`, `\r`, `\t`, `\xHH`, `\u{HHHH}`)
/// replaced by a space.
func withoutEscapes(_ text: String) -> String {
    let scalars = Array(text.unicodeScalars)
    var out = String.UnicodeScalarView()
    var index = 0
    while index < scalars.count {
        if scalars[index] == "\\", index + 1 < scalars.count {
            let next = scalars[index + 1]
            if next == "n" || next == "r" || next == "t" {
                out.append(" ")
                index += 2
                continue
            }
            if next == "x", index + 3 < scalars.count {
                out.append(" ")
                index += 4
                continue
            }
            if next == "u", index + 2 < scalars.count, scalars[index + 2] == "{", let close = scalars[index...].firstIndex(of: "}") {
                out.append(" ")
                index = close + 1
                continue
            }
        }
        out.append(scalars[index])
        index += 1
    }
    return String(out)
}
