import PushEnvelope
import PushLoopbackServer
import PushTestSupport
import PushSync
import Testing

@testable import PushHTTP
@testable import PushTransports

/// Providers (or whatever answers in their place) as a hostile party would answer, and data
/// that could steer a request (issue 15).
@Suite struct HostileProviderTests {
    /// Whether a reason could act on a terminal or a log: a control or line/bidi character.
    func hasControls(_ text: String) -> Bool { text.unicodeScalars.contains(where: SafeText.needsEscape) }

    /// A service account's `project_id` is data: percent-encoded into the path, it can never send
    /// the bearer token to another path (or query) of the FCM host.
    @Test func aHostileProjectIdStaysOnePathSegment() async throws {
        let stand = try StandIn(respond: FCMFixture.google())
        let keys = try #require(TestKeys.rsa2048())
        let json = JSONValue.object([
            "type": "service_account", "project_id": "../../evil?x=1#", "client_email": "a@p.iam.gserviceaccount.com",
            "private_key": .string(keys.privateKeyPEM), "token_uri": .string(stand.server.baseURL + "/token"),
        ])
        let account = try FCMServiceAccount(json: json.canonicalBytes)
        let transport = FCMTransport(endpoint: stand.server.baseURL, account: account, client: stand.client)
        _ = await transport.send([plaintextDelivery()])
        await stand.shutdown()
        let paths = stand.server.requests.map(\.path)
        #expect(paths.contains("/v1/projects/..%2F..%2Fevil%3Fx%3D1%23/messages:send"), "\(paths)")
        #expect(!paths.contains { $0.hasPrefix("/evil") || $0.contains("?x=1") })
    }

    @Test func theAPNsTokenIsEncodedIntoThePath() {
        let transport = APNsTransportRequestProbe.request(token: String(repeating: "0A", count: 32))
        #expect(transport.url.hasSuffix("/3/device/" + String(repeating: "0A", count: 32)))
    }

    /// The relay's `code`, APNs `reason`, FCM `errorCode`/`status`/`message` and OAuth `error` are
    /// capped, their controls escaped, and anything that looks like a token redacted.
    @Test func providerStringsAreCappedEscapedAndScrubbed() {
        let token = String(repeating: "a1", count: 32)
        let long = String(repeating: "lorem ipsum ", count: 250)
        let relay = RelayProvider.parse(
            status: 400, body: Array(#"{"ok":false,"code":"bad\u001b[31m\#(long)","message":"token \#(token) \u0007\u009b\#(long)"}"#.utf8))
        let apns = APNsProvider.parse(status: 400, body: Array(#"{"reason":"Bad\r\nX-Forged: 1\#(long)"}"#.utf8))
        let fcm = FCMProvider.parse(
            status: 400,
            body: Array(#"{"error":{"code":400,"message":"Bearer ya29.a0AfH6SMBx3k9ZqVwXyZ0123456789abcdef refused \u202e\#(long)","status":"INVALID\u001b","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\u0085\#(long)"}]}}"#.utf8))
        for result in [relay, apns, fcm] {
            let reason = result.reasonText ?? ""
            #expect(!hasControls(reason), "\(reason.debugDescription)")
            #expect(reason.count <= 270, "\(reason.count)")
            #expect(!reason.contains(token))
            #expect(!reason.contains("ya29.a0AfH6SMBx3k9ZqVwXyZ0123456789abcdef"))
        }
        #expect(relay.reasonText?.hasPrefix(#"bad\x1B[31mlorem ipsum"#) == true, "\(relay.reasonText ?? "")")
        #expect(relay.reasonText?.contains("token [redacted] \\x07\\x9B") == true, "\(relay.reasonText ?? "")")
        #expect(apns.reasonText?.hasPrefix(#"Bad\r\nX-Forged: 1"#) == true)
        #expect(fcm.reasonText?.hasPrefix(#"\x85lorem ipsum"#) == true, "\(fcm.reasonText ?? "")")
        // The decisions still read the provider's words as sent.
        #expect(APNsProvider.parse(status: 410, body: Array(#"{"reason":"Unregistered"}"#.utf8)).said == .tokenDead(since: nil))
    }

    /// A provider echoing what we sent (here the relay, quoting the device token and the request)
    /// never puts it into the reason, even when it is short enough not to look like a token.
    @Test func anEchoedTokenNeverReachesTheReason() async throws {
        let token = "fcm:short-token"
        let stand = try StandIn { request in
            .text(status: 400, #"{"ok":false,"code":"bad_request","message":"token \#(token) refused"}"#)
        }
        let transport = RelayTransport(baseURL: stand.server.baseURL, client: stand.client)
        let results = await transport.send([envelopeDelivery(.androidPhone, token: token)])
        await stand.shutdown()
        #expect(results.first?.reasonText == "bad_request: token [redacted] refused", "\(results.first?.reasonText ?? "")")
    }

    @Test func anOAuthErrorIsSanitized() async throws {
        let fixture = try FCMFixture(
            respond: FCMFixture.google(token: {
                .text(status: 400, #"{"error":"invalid_grant\u001b]0;pwned\u0007","error_description":"\#(String(repeating: "y", count: 3000))"}"#)
            }))
        let results = await fixture.transport.send([plaintextDelivery()])
        await fixture.stand.shutdown()
        let reason = results.first?.reasonText ?? ""
        #expect(reason.hasPrefix(#"oauth: Google refused the service account (invalid_grant\x1B]0;pwned\x07: yyy"#), "\(reason)")
        #expect(!hasControls(reason))
        #expect(reason.count < 400)
    }
}

/// The request APNs would get for a token, without a network.
enum APNsTransportRequestProbe {
    static func request(token: String) -> HTTPRequest {
        let keys = TestKeys.p256()
        let credentials = try? APNsCredentials(pem: Array((keys?.privateKeyPEM ?? "").utf8), keyId: "K", teamId: "T", bundleId: "b")
        guard let credentials, let client = try? HTTPClient() else { return HTTPRequest(url: "") }
        let transport = APNsTransport(endpoint: "https://apns.example.test", credentials: credentials, client: client)
        return transport.apns.request(APNsClient.Push(token: token, envelope: "AAAA", priority: 10, collapseId: "ready-s1"), jwt: "jwt")
    }
}
