import CHapiWebPushFloor
import Foundation
import PushEnvelope
import PushLoopbackServer
import PushNative
import PushTestSupport

/// Rates of `candidates` measured in alternation (`rounds` slices of `seconds` each), so a
/// neighbour's load falls on all of them alike; each the median of its slices.
func measureInTurn(rounds: Int = 5, seconds: Double = 0.4, _ candidates: [() throws -> Void]) throws -> [Double] {
    var slices = [[Double]](repeating: [], count: candidates.count)
    for _ in 0..<rounds {
        for (index, candidate) in candidates.enumerated() { slices[index].append(try measure(seconds: seconds, candidate)) }
    }
    return slices.map { $0.sorted()[$0.count / 2] }
}

/// `hapi-push-bench webpush`: one Web Push seal against its floor (C on OpenSSL 3 doing only
/// what RFC 8291 makes every message cost: `CHapiWebPushFloor`) and against ECDH alone (what
/// `openssl speed ecdhp256` measures), all in the same run; then a dispatch to 1,000
/// subscriptions against the floor's rate times the cores, with h2load re-sending one sealed
/// body to show what the wire carries.
func benchWebPush() async throws {
    guard let browser = WebPushTestBrowser() else { throw LoopbackServerError(message: "no browser key") }
    let session = PushSession(id: "0d5c1a9e-5f7e-4d8b-9a55-3f1f7d2c8b11", metadata: ["flavor": "claude", "name": "hapi"])
    let payload = PushNotificationComposer.webReady(for: session)
    let plaintext = Array(payload.json.utf8)
    guard let floor = hapi_webpush_floor_new(browser.publicKey, browser.publicKey.count, browser.authSecret, browser.authSecret.count) else {
        throw LoopbackServerError(message: "the C floor could not set up OpenSSL")
    }
    defer { hapi_webpush_floor_free(floor) }
    let recipient = try WebPushRecipient(subscriptionKey: browser.publicKey, authSecret: browser.authSecret)
    var buffer = [UInt8](repeating: 0, count: WebPushCipher.maximumBodyByteCount)
    let capacity = buffer.count
    print("\n== Web Push (\(plaintext.count)-byte payload) ==")
    var sink = 0
    let rates = try measureInTurn([
        { sink &+= Int(hapi_webpush_floor_ecdh(floor)) },
        { sink &+= buffer.withUnsafeMutableBufferPointer { hapi_webpush_floor_seal(floor, plaintext, plaintext.count, $0.baseAddress, capacity) } },
        { sink &+= try WebPushCipher.seal(plaintext: plaintext, for: recipient).count },
        { sink &+= try WebPushCipher.seal(plaintext: plaintext, subscriptionKey: browser.publicKey, authSecret: browser.authSecret).count },
    ])
    let (ecdh, floorRate, sealed, sealedParsing) = (rates[0], rates[1], rates[2], rates[3])
    func ratio(_ value: Double) -> String { String(format: "%.2f", value) }
    print("ECDH alone (EVP_PKEY_derive, openssl speed's measure)   \(format(ecdh))")
    print("floor: C, fresh key + ECDH + HKDF + AES-128-GCM         \(format(floorRate))   \(ratio(floorRate / ecdh)) of ECDH alone")
    print(
        "WebPushCipher.seal (keys parsed once per subscription)  \(format(sealed))   ratio \(ratio(sealed / floorRate)) of the floor (goal ≥ 0.8), "
            + "\(ratio(sealed / ecdh)) of ECDH alone (goal ≥ 0.5)")
    print("WebPushCipher.seal (p256dh parsed on every call)        \(format(sealedParsing))   ratio \(ratio(sealedParsing / floorRate)) of the floor")

    let server = try LoopbackServer { _ in .init(status: 201) }
    defer { server.stop() }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-bench-webpush-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let environment = [
        "HAPI_HOME": directory, "HAPI_PUSH_CA_FILE": server.caCertificatePath ?? "", "HAPI_WEB_PUSH_ALLOW_PRIVATE_ENDPOINTS": "1",
        "HAPI_IOS_PUSH": "off", "HAPI_ANDROID_PUSH": "off",
    ]
    var runtime = NativePush.Configuration()
    runtime.connections.maximumPerHost = 1
    let push = try await NativePush.start(environment: environment, dataDirectory: directory, persistSettings: false, runtime: runtime)
    guard let routes = push.webPush else { throw LoopbackServerError(message: push.webPushOffReason ?? "Web Push is off") }
    for i in 0..<1000 {
        try await routes.store.addWebSubscription(
            namespace: "bench", endpoint: server.baseURL + "/push/\(i)", p256dh: browser.p256dh, auth: browser.auth, now: Int64(i))
    }
    _ = try await push.sendWebPush(payload, namespace: "bench", nativeSent: false)  // warm: the connection and the JWT
    // WEBPUSH_DISPATCH_ROUNDS: more rounds for a profile of the dispatch alone (`perf record -p`).
    let rounds = benchKnob("WEBPUSH_DISPATCH_ROUNDS").map { max(1, $0) } ?? 5
    var sent = 0
    let cpuBefore = processCPUSeconds()
    let elapsed = try await secondsAsync {
        for _ in 0..<rounds { sent += try await push.sendWebPush(payload, namespace: "bench", nativeSent: false).deliveries.filter { $0.outcome == .sent }.count }
    }
    let cpu = processCPUSeconds() - cpuBefore
    await push.shutdown()
    let rate = Double(sent) / elapsed
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let ceiling = floorRate * Double(cores)
    let body = try WebPushCipher.seal(plaintext: plaintext, subscriptionKey: browser.publicKey, authSecret: browser.authSecret)
    let wire = h2loadRate(url: server.baseURL + "/push/0", body: body, requests: 20_000, streams: 100)
    print(
        "dispatch to 1,000 subscriptions: \(format(rate)) messages   floor × \(cores) cores \(format(ceiling))   ratio \(ratio(rate / ceiling)) (goal ≥ 0.8)")
    // Where the rest goes: every thread of this process (the seals, the HTTP/2 client, the
    // stand-in push service) per message, against the floor's one seal; cores / that CPU is the
    // most this process could send.
    if sent > 0 {
        let perMessage = cpu / Double(sent)
        print(
            "CPU per message: \(String(format: "%.1f", perMessage * 1e6)) µs, every thread of this process (the stand-in push service too); "
                + "the floor's seal \(String(format: "%.1f", 1e6 / floorRate)) µs: at this CPU, all \(cores) cores busy would reach "
                + "\(ratio(Double(cores) / perMessage / ceiling)) of the floor × \(cores)")
    }
    if let wire {
        print("the wire: h2load re-sending one sealed body \(format(wire)) (\(wire > ceiling ? "not the limit" : "THE LIMIT: below the floor × cores"))")
    } else {
        print("the wire: h2load unavailable (install nghttp2-client)")
    }
    print("connections used: \(server.connectionsAccepted - (wire == nil ? 0 : 1)) for the dispatch (h2load: 1)")
    print("(figures are this machine's at this moment: only the ratios, measured in the same run, mean anything)")
    if sink == 42 { print("") }
}
