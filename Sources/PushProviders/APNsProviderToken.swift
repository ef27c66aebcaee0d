#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushEnvelope

/// The APNs provider token (an ES256 JWT), minted once and shared by every push for 45
/// minutes: Apple throttles keys that mint too often (`TooManyProviderTokenUpdates`) and refuses
/// tokens older than an hour.
///
/// An actor, and signing never suspends, so concurrent pushes that find the token stale cause
/// exactly one mint (single flight). Time comes only from the injected clock, for `iat` and for
/// expiry alike, so tests control both.
package actor APNsProviderToken {
    /// How long a minted token is reused.
    package static let lifetime: Double = 45 * 60

    private let credentials: APNsCredentials
    private let now: @Sendable () -> Double
    private var current: (token: String, issuedAt: Double)?
    /// How many tokens were minted (for tests and diagnostics).
    package private(set) var mintCount = 0

    /// - Parameter now: seconds since 1970 (the wall clock by default).
    package init(credentials: APNsCredentials, now: @escaping @Sendable () -> Double = WallClock.seconds) {
        self.credentials = credentials
        self.now = now
    }

    /// The token to send, minting a new one when there is none or it is 45 minutes old.
    package func token() throws(PushCredentialError) -> String {
        let time = now()
        if let current, time - current.issuedAt < Self.lifetime, time >= current.issuedAt {
            return current.token
        }
        return try mint(at: time)
    }

    /// Called after `403 ExpiredProviderToken`: mints a new token unless another push already
    /// replaced the one that failed, so a burst of rejections mints once.
    package func refresh(rejected token: String) throws(PushCredentialError) -> String {
        if let current, current.token != token { return current.token }
        return try mint(at: now())
    }

    private func mint(at time: Double) throws(PushCredentialError) -> String {
        let issuedAt = Int64(time.rounded(.down))
        let token = try JSONWebToken.sign(
            header: ["alg": "ES256", "kid": .string(credentials.keyId)],
            claims: ["iss": .string(credentials.teamId), "iat": .integer(issuedAt)],
            key: credentials.signingKey)
        current = (token, time)
        mintCount += 1
        return token
    }
}

/// The system wall clock, in seconds since 1970.
package enum WallClock {
    @Sendable package static func seconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
