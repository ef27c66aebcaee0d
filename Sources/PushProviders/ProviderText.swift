package import PushEnvelope

/// How a provider's words are read and kept: bodies as JSON objects when they are ones, codes
/// and messages sanitized and capped, `Retry-After` as seconds, path segments encoded.
package enum ProviderText {
    /// The body as a JSON object, when it is one (members then looked up exactly, `value["key"]`).
    package static func jsonObject(_ body: [UInt8]) -> JSONValue? {
        guard !body.isEmpty, body.count <= 65_536, let value = try? JSONParser.parse(body), value.objectValue != nil else { return nil }
        return value
    }

    /// A provider's message as it may be kept and printed (`SafeText.sanitize`): controls
    /// escaped, anything that looks like a token redacted, at most 200 characters.
    package static func excerpt(_ text: String) -> String {
        SafeText.sanitize(text, limit: 200, redactingTokens: true)
    }

    /// A provider's code (the relay's `code`, APNs `reason`, FCM `errorCode`/`status`, OAuth
    /// `error`) as it may be kept and printed: the same sanitizer, at most 64 characters.
    package static func code(_ text: String) -> String {
        SafeText.sanitize(text, limit: 64, redactingTokens: true)
    }

    /// `Retry-After` as delay-seconds, capped at an hour (HTTP dates are rare from push
    /// providers and are treated as absent).
    package static func retryAfter(_ value: String?) -> Duration? {
        guard let value else { return nil }
        var slice = Substring(value)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        guard let seconds = Int(slice), seconds >= 0 else { return nil }
        return .seconds(min(seconds, 3600))
    }

    /// One path segment, percent-encoded but for RFC 3986's unreserved characters: a value from
    /// outside (a device token, a project id) never changes where a request goes.
    package static func pathSegment(_ value: String) -> String {
        if value == "." { return "%2E" }
        if value == ".." { return "%2E%2E" }
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
