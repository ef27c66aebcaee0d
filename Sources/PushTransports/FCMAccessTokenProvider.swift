package import PushHTTP
import PushProviders

/// The OAuth access token for FCM HTTP v1: an RS256 JWT assertion from the service account,
/// exchanged at the token URI, cached until 60 seconds before it expires, refreshed single
/// flight (concurrent callers share one exchange).
package actor FCMAccessTokenProvider {
    private let account: FCMServiceAccount
    private let client: HTTPClient
    private let now: @Sendable () -> Double
    private var cached: (token: String, expiresAt: Double)?
    private var inFlight: Task<String, any Error>?
    /// Exchanges performed (for tests and diagnostics).
    package private(set) var exchangeCount = 0

    package init(account: FCMServiceAccount, client: HTTPClient, now: @escaping @Sendable () -> Double = WallClock.seconds) {
        self.account = account
        self.client = client
        self.now = now
    }

    /// A valid access token, exchanging a new assertion when needed.
    package func token() async throws(FCMAuthError) -> String {
        if let cached, now() < cached.expiresAt - 60 { return cached.token }
        if let inFlight { return try await Self.await(inFlight) }
        let task = Task { try await self.exchange() }
        inFlight = task
        defer { inFlight = nil }
        return try await Self.await(task)
    }

    /// Forgets the cached token after FCM answered 401, so the next batch exchanges anew.
    package func invalidate(_ token: String) {
        if cached?.token == token { cached = nil }
    }

    private static func await(_ task: Task<String, any Error>) async throws(FCMAuthError) -> String {
        do {
            return try await task.value
        } catch let error as FCMAuthError {
            throw error
        } catch {
            throw FCMAuthError(message: "token exchange failed: \(error)")
        }
    }

    private func exchange() async throws -> String {
        exchangeCount += 1
        let assertion = try FCMOAuth.assertion(
            clientEmail: account.clientEmail, tokenURI: account.tokenURI, key: account.signingKey, issuedAt: Int64(now().rounded(.down)))
        let request = HTTPRequest(
            method: .post, url: account.tokenURI, headers: ["content-type": FCMOAuth.contentType], body: FCMOAuth.form(assertion: assertion))
        // Once more if its stream was refused unprocessed, within the first try's timeout.
        let deadline = ContinuousClock.now + client.configuration.requestTimeout
        let response: HTTPResponse
        switch await client.sendResendingRefused(request, deadline: deadline)?.result {
        case .success(let answered): response = answered
        case .failure(let error): throw FCMAuthError(message: "token endpoint unreachable: \(error)")
        case nil: throw FCMAuthError(message: "token endpoint unreachable: \(HTTPClientError.timeout)")
        }
        let (token, lifetime) = try FCMOAuth.parse(status: response.status, body: response.body, assertion: assertion)
        cached = (token, now() + lifetime)
        return token
    }
}
