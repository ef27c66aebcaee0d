import DeviceRegistry
import FuzzCheck
import PushEnvelope

/// Register and unregister bodies: a body either yields a request that obeys the contract or a
/// 400 whose JSON body carries exactly the error's form and field messages, in order.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    do {
        let request = try PushDeviceRegistry.decodeRegistration(namespace: "default", body: body)
        require(!request.token.isEmpty, "accepted an empty token")
        require((1...128).contains(request.deviceId.utf16.count), "accepted deviceId \(request.deviceId.utf16.count) units long")
        switch request.platform {
        case .ios:
            require(request.pushKey != nil, "accepted ios without a push key")
            require(request.token == request.token.lowercased() && request.token.utf8.count % 2 == 0, "ios token not normalized")
        case .wear:
            require(request.pushKey == nil, "stored a wear push key")
        case .phone:
            require(request.token.utf8.allSatisfy { (0x21...0x7E).contains($0) }, "phone token not printable ASCII")
        }
    } catch {
        checkAnswer(error)
    }
    do {
        let token = try PushDeviceRegistry.decodeUnregistration(body: body)
        require(!token.isEmpty, "accepted an empty unregister token")
    } catch {
        checkAnswer(error)
    }
    return 0
}

/// The 400 body is `{"error":"Invalid body","issues":{"formErrors":[...],"fieldErrors":{...}}}`.
func checkAnswer(_ error: PushRegistrationError) {
    require(!error.fieldErrors.isEmpty || !error.formErrors.isEmpty, "a PushRegistrationError without problems")
    let fields: JSONValue = .object(error.orderedFieldErrors.map { (key: $0.field, value: .array($0.messages.map { .string($0) })) })
    guard let answer = try? JSONParser.parse(error.responseBody),
        answer["error"] == "Invalid body", answer["issues"]?["fieldErrors"] == fields,
        answer["issues"]?["formErrors"] == .array(error.formErrors.map { .string($0) }),
        answer["issues"]?["fieldErrors"]?.objectValue?.map(\.key) == error.orderedFieldErrors.map(\.field)
    else { violated("malformed 400 body: \(error.responseBody)") }
}
