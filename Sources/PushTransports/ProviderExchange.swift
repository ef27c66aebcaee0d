package import PushHTTP
package import PushProviders

/// How a provider client's request travels and comes back, chosen by whoever calls the client:
/// the hub's `ProviderCall` (its retry policy, the endpoint backoff, the in-flight gauge), the
/// relay's one try within the push's deadline. The client (`APNsClient`, `FCMClient`) decides
/// what is sent and what an answer obliges it to do (a fresh provider token, a dropped access
/// token); the exchange decides only how often and how long, so that part stays the caller's.
package protocol ProviderExchange: Sendable {
    /// Sends `request` and reads the answer with `parse`; a request that is never answered is read
    /// as `HTTPClientError.unanswered`, and one the exchange declines to send as its own reason
    /// (`endpoint_backoff`, `timeout`) with no attempt.
    func exchange(_ request: HTTPRequest, parse: (HTTPResponse) -> ProviderAnswer) async -> ProviderExchangeResult
}
