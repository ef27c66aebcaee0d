import PushEnvelope
import PushHTTP
import PushTransports

/// Forwards an iOS push to APNs: `POST /3/device/<token>` over the shared multiplexed HTTP/2
/// client with the ES256 provider token (minted once, re-signed after 45 minutes, and once
/// more on `403 ExpiredProviderToken`, when this push is retried once with the new token).
struct RelayAPNsForwarder: Sendable {
    let endpoint: String
    let topic: String
    let providerToken: APNsProviderToken
    let client: HTTPClient

    func forward(_ push: RelayPush, deadline: ContinuousClock.Instant) async -> RelayProviderOutcome {
        let jwt: String
        do {
            jwt = try await providerToken.token()
        } catch {
            return RelayProviderOutcome(.upstream, reason: "provider_token")
        }
        let first = await attempt(push, jwt: jwt, deadline: deadline)
        guard first.verdict == .upstream, first.providerStatus == 403, first.reason == "ExpiredProviderToken" else { return first }
        let fresh: String
        do {
            fresh = try await providerToken.refresh(rejected: jwt)
        } catch {
            return RelayProviderOutcome(.upstream, providerStatus: 403, reason: "provider_token")
        }
        return await attempt(push, jwt: fresh, deadline: deadline)
    }

    private func attempt(_ push: RelayPush, jwt: String, deadline: ContinuousClock.Instant) async -> RelayProviderOutcome {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .milliseconds(1) else { return RelayProviderOutcome(.upstream, reason: "timeout") }
        do {
            let response = try await client.send(request(push, jwt: jwt, timeout: remaining))
            return RelayProviderOutcome.apns(status: response.status, body: response.body)
        } catch {
            return RelayProviderOutcome.network(error)
        }
    }

    /// The spec's body, byte for byte `APNsTransport`'s: a generic alert that the Notification
    /// Service Extension replaces after decrypting `hapi.e`. The envelope was validated as
    /// standard base64, so it is written as is: nothing in it needs a JSON escape.
    static func body(envelope: String) -> [UInt8] {
        var out = Self.bodyPrefix
        out.reserveCapacity(out.count + envelope.utf8.count + 3)
        out.append(contentsOf: envelope.utf8)
        out.append(contentsOf: #""}}"#.utf8)
        return out
    }

    private static let bodyPrefix = Array(#"{"aps":{"mutable-content":1,"alert":{"title":"HAPI","body":"New activity"},"sound":"default"},"hapi":{"v":1,"e":""#.utf8)

    /// The spec's request: alert push type, expiration 0, the collapse id only when there is one.
    func request(_ push: RelayPush, jwt: String, timeout: Duration) -> HTTPRequest {
        var headers: HTTPHeaders = [
            "authorization": "bearer " + jwt,
            "apns-topic": topic,
            "apns-push-type": "alert",
            "apns-priority": String(push.priority),
            "apns-expiration": "0",
        ]
        if let collapseId = push.collapseId { headers.add(name: "apns-collapse-id", value: collapseId) }
        headers.add(name: "content-type", value: "application/json")
        return HTTPRequest(
            method: .post, url: endpoint + "/3/device/" + HTTPBaseURL.pathSegment(push.token), headers: headers, body: Self.body(envelope: push.envelope),
            timeout: timeout)
    }
}
