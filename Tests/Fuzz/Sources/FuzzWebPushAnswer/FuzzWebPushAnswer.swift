import FuzzCheck
import PushProviders
import PushTransports

/// A push service's answer: the first two bytes are the HTTP status (big-endian), the next
/// byte the length of a `Retry-After` value that follows, the rest the body. Besides not
/// crashing: the subscription is dropped (`.invalid`, token evidence) only on 404 or 410,
/// `.sent` exactly for 2xx, only 429 and 5xx but 501 retried (by `HubAnswerPolicy`), and what is kept of the
/// service's text is bounded and free of control characters.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 3 else { return 0 }
    let status = Int(data[0]) << 8 | Int(data[1])
    let retryLength = min(Int(data[2]), size - 3)
    let retryAfter = String(decoding: UnsafeBufferPointer(start: data + 3, count: retryLength), as: UTF8.self)
    let body = Array(UnsafeBufferPointer(start: data + 3 + retryLength, count: size - 3 - retryLength))
    let answer = WebPushProvider.parse(status: status, body: body) { $0 == "retry-after" ? retryAfter : nil }
    let retries = HubAnswerPolicy.mayRetry(answer)
    switch HubAnswerPolicy.outcome(answer) {
    case .sent: require((200...299).contains(status), "sent for status \(status)")
    case .invalid:
        require(status == 404 || status == 410, "the subscription dropped for status \(status): \(answer)")
        require(!retries, "a gone subscription is retryable")
    case .failed, .skipped: require(!(200...299).contains(status), "failed for 2xx status \(status)")
    }
    if answer.evidence != nil { require(status == 404 || status == 410, "evidence for status \(status)") }
    require(retries == (status == 429 || ((500...599).contains(status) && status != 501)), "retried \(retries) for \(status)")
    for text in [answer.reasonText, answer.detail].compactMap({ $0 }) {
        require(text.utf8.count <= 4096, "a kept text of \(text.utf8.count) bytes")
        require(!text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "a control character kept: \(text.debugDescription)")
    }
    if let retry = answer.retryAfter { require(retry >= .zero && retry <= .seconds(3600), "Retry-After \(retry)") }
    return 0
}
