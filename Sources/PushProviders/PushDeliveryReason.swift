/// Why a delivery came out as it did, as a value a hub can switch on: every reason this library
/// produces is a static member, and a provider's own reason we do not know (an APNs `reason`,
/// an FCM error code, a relay's `code`) is kept as it came, sanitized, rather than lost, so a
/// new provider reason needs no new release. What a reason's text says beyond its name (a
/// provider's message, the OAuth error) travels separately, as a sanitized `detail`.
///
/// Open like a string enum that grows: compare with `==` against the static members; the raw
/// value is what reports, logs and `hapi-push send --json` print.
public struct PushDeliveryReason: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    // Decided before anything is sent.

    /// The device registered without a push key, so no envelope can be sealed for it.
    public static let missingPushKey = PushDeliveryReason(rawValue: "missing_push_key")
    /// The relay cannot reach watches (they register no key).
    public static let wearRelayUnsupported = PushDeliveryReason(rawValue: "wear_relay_unsupported")
    /// The platform's channel is off; the detail says why.
    public static let channelOff = PushDeliveryReason(rawValue: "channel_off")
    /// Even the minimal notification exceeds the provider's size limit.
    public static let tooLarge = PushDeliveryReason(rawValue: "too_large")
    /// The envelope could not be sealed; the detail says why.
    public static let sealFailed = PushDeliveryReason(rawValue: "seal_failed")
    /// The APNs provider token could not be minted; the detail says why.
    public static let providerToken = PushDeliveryReason(rawValue: "provider_token")
    /// Google refused the service account or could not be reached; the detail says why.
    public static let oauth = PushDeliveryReason(rawValue: "oauth")
    /// The endpoint failed to connect recently: sends fail fast until its backoff window ends.
    public static let endpointBackoff = PushDeliveryReason(rawValue: "endpoint_backoff")
    /// An APNs token that breaks `APNsDeviceToken`'s rule (an even number of hex digits, 16 to
    /// 512), refused without a request.
    public static let badDeviceTokenFormat = PushDeliveryReason(rawValue: "BadDeviceToken_format")
    /// A delivery handed to a transport that cannot carry it (a bug of the caller).
    public static let relayRequiresEnvelope = PushDeliveryReason(rawValue: "relay_requires_envelope")
    public static let apnsRequiresEnvelope = PushDeliveryReason(rawValue: "apns_requires_envelope")
    public static let apnsRequiresIOSToken = PushDeliveryReason(rawValue: "apns_requires_ios_token")
    public static let fcmRequiresPlaintext = PushDeliveryReason(rawValue: "fcm_requires_plaintext")
    public static let fcmRequiresAndroidToken = PushDeliveryReason(rawValue: "fcm_requires_android_token")
    /// A transport answered no result for a delivery (never expected).
    public static let noResult = PushDeliveryReason(rawValue: "no_result")

    // The network.

    public static let dnsFailure = PushDeliveryReason(rawValue: "dns_failure")
    public static let connectionRefused = PushDeliveryReason(rawValue: "connection_refused")
    public static let tlsFailure = PushDeliveryReason(rawValue: "tls_failure")
    public static let streamRefused = PushDeliveryReason(rawValue: "stream_refused")
    /// No answer within the request timeout.
    public static let timeout = PushDeliveryReason(rawValue: "timeout")
    public static let connectionLost = PushDeliveryReason(rawValue: "connection_lost")
    public static let cancelled = PushDeliveryReason(rawValue: "cancelled")
    /// The client was shut down while the request was in flight.
    public static let shutdown = PushDeliveryReason(rawValue: "shutdown")
    public static let responseTooLarge = PushDeliveryReason(rawValue: "response_too_large")
    public static let badResponse = PushDeliveryReason(rawValue: "bad_response")
    public static let invalidRequest = PushDeliveryReason(rawValue: "invalid_request")
    public static let invalidConfiguration = PushDeliveryReason(rawValue: "invalid_configuration")
    public static let networkError = PushDeliveryReason(rawValue: "network_error")
    /// A Web Push endpoint whose host resolves only to loopback, private, link-local or other
    /// refused addresses (server-side request forgery): nothing was sent, the subscription kept.
    public static let endpointNotAllowed = PushDeliveryReason(rawValue: "endpoint_not_allowed")
    /// A Web Push service's 404 or 410: the subscription expired or was withdrawn; it is removed.
    public static let subscriptionGone = PushDeliveryReason(rawValue: "subscription_gone")

    // Egress proxies (HTTPS_PROXY, settings.json `httpsProxy`, RELAY_HTTPS_PROXY).

    /// The proxy answered CONNECT with 407: its credentials are missing or wrong.
    public static let proxyAuthRequired = PushDeliveryReason(rawValue: "proxy_auth_required")
    /// The proxy refused CONNECT with another status (the detail has it), e.g. 403.
    public static let proxyRefused = PushDeliveryReason(rawValue: "proxy_refused")

    // Answers that prove a token dead (the outcome is `invalid` and the registration pruned).

    /// The relay's `410 {"code":"unregistered"}`.
    public static let unregistered = PushDeliveryReason(rawValue: "unregistered")
    /// APNs `410 Unregistered`.
    public static let apnsUnregistered = PushDeliveryReason(rawValue: "Unregistered")
    /// APNs `410 ExpiredToken`.
    public static let apnsExpiredToken = PushDeliveryReason(rawValue: "ExpiredToken")
    /// APNs `400 BadDeviceToken`.
    public static let apnsBadDeviceToken = PushDeliveryReason(rawValue: "BadDeviceToken")
    /// FCM `404 UNREGISTERED`.
    public static let fcmUnregistered = PushDeliveryReason(rawValue: "UNREGISTERED")
    /// FCM `400 INVALID_ARGUMENT` about the token (the detail says so).
    public static let fcmInvalidArgument = PushDeliveryReason(rawValue: "INVALID_ARGUMENT")

    // Provider answers we act on.

    /// APNs says our JWT is too old: we mint a new one and retry once.
    public static let apnsExpiredProviderToken = PushDeliveryReason(rawValue: "ExpiredProviderToken")
    /// APNs says we minted JWTs too often: we keep ours and back off.
    public static let apnsTooManyProviderTokenUpdates = PushDeliveryReason(rawValue: "TooManyProviderTokenUpdates")

    /// An HTTP status without a reason we could read (`http_503`).
    public static func http(_ status: Int) -> PushDeliveryReason { PushDeliveryReason(rawValue: "http_\(status)") }

    /// The reason with its detail, as reports, logs and `hapi-push send --json` have always
    /// printed it: `reason: detail` (`NOT_FOUND: Requested entity was not found.`), and for a
    /// refresh after `ExpiredProviderToken` that failed, `ExpiredProviderToken; refresh failed: …`.
    public func text(detail: String?) -> String {
        guard let detail else { return rawValue }
        return rawValue + (self == .apnsExpiredProviderToken ? "; " : ": ") + detail
    }
}

/// Which way out a delivery took: what reports, logs and metrics call a transport.
public enum PushTransportName: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case relay, apns, fcm
    /// Web Push (RFC 8030) to a browser's push service.
    case webpush
    /// Skipped before a transport was chosen (the channel is off).
    case none
    public var description: String { rawValue }
}
