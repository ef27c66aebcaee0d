import FuzzCheck
import PushProviders
import PushTransports

/// The first two bytes are the HTTP status (big-endian), the rest the provider's body. Besides
/// not crashing, the hub's policy (`HubAnswerPolicy`) reads a dead token (`.invalid`, which
/// prunes a registration) only from the answers that prove it, and `.sent` exactly for 2xx.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let status = Int(data[0]) << 8 | Int(data[1])
    let body = Array(UnsafeBufferPointer(start: data + 2, count: size - 2))

    check("relay", RelayProvider.parse(status: status, body: body), status: status, invalidOnly: [410: ["unregistered"]])
    check("APNs", APNsProvider.parse(status: status, body: body), status: status,
        invalidOnly: [410: ["Unregistered", "ExpiredToken"], 400: ["BadDeviceToken"]])
    check("FCM", FCMProvider.parse(status: status, body: body), status: status,
        invalidOnly: [404: ["UNREGISTERED"], 400: ["INVALID_ARGUMENT: invalid registration token"]])
    return 0
}

/// `invalidOnly`: the statuses that may prove a dead token, each with the reasons that do.
func check(_ provider: String, _ result: ProviderAnswer, status: Int, invalidOnly: [Int: Set<String>]) {
    switch HubAnswerPolicy.outcome(result) {
    case .sent:
        require((200...299).contains(status), "\(provider): sent for status \(status)")
    case .invalid:
        require(invalidOnly[status]?.contains(result.reasonText ?? "") == true, "\(provider): invalid for status \(status): \(result)")
        require(!HubAnswerPolicy.mayRetry(result), "\(provider): a dead token is retryable: \(result)")
    case .failed, .skipped:
        require(!(200...299).contains(status), "\(provider): failed for 2xx status \(status)")
    }
    // The relay's stricter reading: it answers `unregistered` only on evidence of these kinds.
    if result.evidence != nil {
        require(!(200...299).contains(status), "\(provider): token evidence on 2xx status \(status)")
        require(result.said != .accepted, "\(provider): token evidence on an accepted answer")
    }
}
