extension PushNotificationPayload {
    /// The exact plaintext the JavaScript hub would seal: `JSON.stringify` of the fields
    /// sorted by UTF-16 code units.
    ///
    /// Written directly rather than through a `JSONValue` tree: every value is a string and
    /// the keys are fixed, so their canonical order is known in advance (tests check this
    /// against the general serializer). This is the dispatcher's hot path.
    public var canonicalJSON: [UInt8] {
        var out: [UInt8] = []
        // The keys and punctuation take at most 130 bytes; escapes may add more (the array grows).
        out.reserveCapacity(
            130 + title.utf8.count + body.utf8.count + sessionId.utf8.count + contractVersion.utf8.count
                + type.rawValue.utf8.count + (sessionName?.utf8.count ?? 0) + (url?.utf8.count ?? 0)
                + (requestId?.utf8.count ?? 0) + (severity?.rawValue.utf8.count ?? 0) + (notifySummary?.utf8.count ?? 0))
        out.append(UInt8(ascii: "{"))
        Self.member("body", body, first: true, into: &out)
        Self.member("contractVersion", contractVersion, into: &out)
        if let notifySummary { Self.member("notifySummary", notifySummary, into: &out) }
        if let requestId { Self.member("requestId", requestId, into: &out) }
        Self.member("sessionId", sessionId, into: &out)
        if let sessionName { Self.member("sessionName", sessionName, into: &out) }
        if let severity { Self.member("severity", severity.rawValue, into: &out) }
        Self.member("title", title, into: &out)
        Self.member("type", type.rawValue, into: &out)
        if let url { Self.member("url", url, into: &out) }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The keys in the order `canonicalJSON` writes them.
    static let canonicalKeyOrder = [
        "body", "contractVersion", "notifySummary", "requestId", "sessionId", "sessionName", "severity", "title", "type", "url",
    ]

    private static func member(_ key: StaticString, _ value: String, first: Bool = false, into out: inout [UInt8]) {
        if !first { out.append(UInt8(ascii: ",")) }
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
        CanonicalJSON.writeString(value, into: &out)
    }
}
