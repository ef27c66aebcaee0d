import PushHTTP
package import PushProviders

/// FCM HTTP v1 as both the hub (`FCMTransport`) and the relay (`RelayFCMForwarder`) send it:
/// the request (`FCMProvider.request`), the service account's OAuth access token, and what
/// Google's answer obliges us to do before anyone's policy reads it: a 401 says the access token
/// is no longer taken, so it is dropped from the cache (`FCMAccessTokenProvider.invalidate`) and
/// the next send that asks for one exchanges anew. How a request travels is the caller's
/// `ProviderExchange`; what the report means is the caller's policy.
package struct FCMClient: Sendable {
    /// Scheme and authority, no trailing slash.
    package var endpoint: String { parsedEndpoint.text }
    /// The endpoint parsed once: each message's request carries its origin.
    let parsedEndpoint: HTTPEndpoint
    package let projectId: String
    package let accessTokens: FCMAccessTokenProvider

    package init(endpoint: String, projectId: String, accessTokens: FCMAccessTokenProvider) {
        self.parsedEndpoint = HTTPEndpoint(endpoint)
        self.projectId = projectId
        self.accessTokens = accessTokens
    }

    /// One message: the registration token, what `data` carries, `HIGH` or `NORMAL`, whether a
    /// watch that rebooted may show it, and the app it is restricted to (the relay's).
    package struct Message: Sendable {
        package var token: String
        package var data: FCMProvider.Data
        package var highPriority: Bool
        package var directBootOK: Bool
        package var restrictedPackage: String?

        package init(token: String, data: FCMProvider.Data, highPriority: Bool, directBootOK: Bool = false, restrictedPackage: String? = nil) {
            self.token = token
            self.data = data
            self.highPriority = highPriority
            self.directBootOK = directBootOK
            self.restrictedPackage = restrictedPackage
        }
    }

    /// What happened to one message.
    package struct Report: Sendable {
        /// The last answer read, its reason and detail scrubbed of the registration token and
        /// the access token; or ours when nothing was sent (`oauth` with the token endpoint's
        /// status, the exchange's own reason).
        package var answer: ProviderAnswer
        /// HTTP attempts in all (the exchange's retries included); 0 when nothing was sent.
        package var attempts: Int
        package var latency: Duration
        /// Whether the access token was dropped after a 401.
        package var invalidatedAccessToken: Bool
        /// Why no access token could be had (then nothing was sent).
        package var tokenFailure: FCMAuthError?
    }

    /// The access token the next message would carry (a batch asks once, so a refused exchange
    /// fails the batch once and is not repeated per device).
    package func accessToken() async throws(FCMAuthError) -> String { try await accessTokens.token() }

    /// Sends `message` over `exchange` with `accessToken` (the cached one, or a new exchange,
    /// when nil).
    package func send(_ message: Message, accessToken: String? = nil, over exchange: some ProviderExchange) async -> Report {
        let token: String
        if let accessToken {
            token = accessToken
        } else {
            do {
                token = try await accessTokens.token()
            } catch {
                return Report(
                    answer: ProviderAnswer(.refused, status: error.status, reason: .oauth, detail: error.message), attempts: 0, latency: .zero,
                    invalidatedAccessToken: false, tokenFailure: error)
            }
        }
        let report = self.report(message, accessToken: token, sent: await exchange.exchange(request(message, accessToken: token), parse: Self.parse))
        return refusesAccessToken(report) ? await invalidating(report, accessToken: token) : report
    }

    /// The request of `message` with `accessToken`, for a caller that starts requests itself
    /// (the hub's chunked send).
    func firstRequest(_ message: Message, accessToken: String) -> HTTPRequest { request(message, accessToken: accessToken) }

    /// What an exchange of `message` with `accessToken` came to, before what it obliges
    /// (`refusesAccessToken`, then `invalidating`).
    package func report(_ message: Message, accessToken: String, sent: ProviderExchangeResult) -> Report {
        Report(
            answer: sent.answer.scrubbed(secrets: [message.token, accessToken]), attempts: sent.attempts, latency: sent.latency,
            invalidatedAccessToken: false, tokenFailure: nil)
    }

    /// 401: Google no longer takes our access token.
    package func refusesAccessToken(_ report: Report) -> Bool { report.answer.status == 401 }

    /// Drops the refused `accessToken`, so the next send that asks for one exchanges anew.
    package func invalidating(_ report: Report, accessToken: String) async -> Report {
        await accessTokens.invalidate(accessToken)
        var report = report
        report.invalidatedAccessToken = true
        return report
    }

    func request(_ message: Message, accessToken: String) -> HTTPRequest {
        HTTPRequest(
            FCMProvider.request(
                token: message.token, data: message.data, highPriority: message.highPriority, directBootOK: message.directBootOK,
                restrictedPackage: message.restrictedPackage, projectId: projectId, accessToken: accessToken), endpoint: parsedEndpoint)
    }

    @Sendable static func parse(_ response: HTTPResponse) -> ProviderAnswer {
        FCMProvider.parse(status: response.status, body: response.body) { response.headers.first(name: $0) }
    }
}
