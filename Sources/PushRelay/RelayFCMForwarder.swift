import PushEnvelope
import PushHTTP
import PushTransports

/// Forwards an Android push to FCM HTTP v1 for the relay's project, with the service account's
/// cached OAuth token: a data-only message (`hapi_v`, `hapi_e`), no notification, no collapse
/// key, restricted to the official app's package.
struct RelayFCMForwarder: Sendable {
    let endpoint: String
    let projectId: String
    let packageName: String
    let accessTokens: FCMAccessTokenProvider
    let client: HTTPClient

    func forward(_ push: RelayPush, deadline: ContinuousClock.Instant) async -> RelayProviderOutcome {
        let accessToken: String
        do {
            accessToken = try await accessTokens.token()
        } catch {
            return RelayProviderOutcome(.upstream, providerStatus: error.status, reason: "oauth")
        }
        let remaining = deadline - ContinuousClock.now
        guard remaining > .milliseconds(1) else { return RelayProviderOutcome(.upstream, reason: "timeout") }
        let request = HTTPRequest(
            method: .post, url: endpoint + "/v1/projects/" + HTTPBaseURL.pathSegment(projectId) + "/messages:send",
            headers: ["authorization": "Bearer " + accessToken, "content-type": "application/json"],
            body: Self.body(token: push.token, envelope: push.envelope, priority: push.priority, packageName: packageName),
            timeout: remaining)
        do {
            let response = try await client.send(request)
            // Google no longer takes this token: the next push exchanges a new one.
            if response.status == 401 { await accessTokens.invalidate(accessToken) }
            return RelayProviderOutcome.fcm(status: response.status, body: response.body)
        } catch {
            return RelayProviderOutcome.network(error)
        }
    }

    /// The spec's message, members in its order:
    /// `{"message":{"token":…,"data":{"hapi_v":"1","hapi_e":…},"android":{"priority":…,"restricted_package_name":…}}}`.
    /// The token is JSON-escaped (it may hold `"` or `\`); the envelope is validated base64 and
    /// the package name an application id, so neither needs escaping.
    static func body(token: String, envelope: String, priority: Int, packageName: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(envelope.utf8.count + token.utf8.count + 160)
        out.append(contentsOf: #"{"message":{"token":"#.utf8)
        out.append(contentsOf: JSONValue.string(token).canonicalBytes)
        out.append(contentsOf: #","data":{"hapi_v":"1","hapi_e":""#.utf8)
        out.append(contentsOf: envelope.utf8)
        out.append(contentsOf: #""},"android":{"priority":""#.utf8)
        out.append(contentsOf: (priority == 5 ? "NORMAL" : "HIGH").utf8)
        out.append(contentsOf: #"","restricted_package_name":""#.utf8)
        out.append(contentsOf: packageName.utf8)
        out.append(contentsOf: #""}}}"#.utf8)
        return out
    }
}
