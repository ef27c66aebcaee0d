import DeviceRegistry
import FuzzCheck
import PushEnvelope

/// The input is a `POST /push/subscribe` body (then a `DELETE` body). Besides not crashing: an
/// accepted subscription obeys every rule docs/wire.md lists (an https endpoint the endpoint
/// parser accepts, with an origin; `p256dh` a point on P-256; `auth` 16 bytes), its fields are
/// the body's strings, and whatever `subscribe` accepts, `unsubscribe` accepts too.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    let removal = PushWebSubscriptions.decodeUnsubscription(body: body)
    guard let request = PushWebSubscriptions.decodeSubscription(body: body) else { return 0 }
    let bytes = Array(request.endpoint.utf8)
    require(bytes.count <= PushWebEndpoint.maximumByteCount, "an endpoint over 2,048 bytes accepted")
    require(bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }, "an endpoint with a space, control, non-ASCII or backslash byte accepted")
    require(request.endpoint.lowercased().hasPrefix("https://"), "a non-https endpoint accepted")
    guard let parts = PushWebEndpoint.parse(request.endpoint) else { violated("an accepted endpoint does not parse") }
    require(PushWebEndpoint.origin(of: request.endpoint) != nil, "an accepted endpoint has no origin")
    require((1...65535).contains(parts.port), "port \(parts.port) accepted")
    require(parts.pathAndQuery.hasPrefix("/"), "a path that does not start with /")
    guard let point = Base64.urlDecode(request.p256dh), WebPushP256Key.isValidPublicKey(point) else { violated("p256dh not a point on P-256") }
    require(Base64.urlDecode(request.auth)?.count == 16, "auth not 16 bytes")
    require(removal == request.endpoint, "subscribe accepted a body unsubscribe refuses or reads differently")
    return 0
}
