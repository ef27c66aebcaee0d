public import PushProviders

/// Where a transport reports each push, one record per device. The host implements it (to
/// forward to its own logging); the default is silent. A record carries a token fingerprint,
/// never the token, envelope, key, JWT or access token.
public protocol PushLogger: Sendable {
    func log(_ record: PushLogRecord)
    /// False for a logger that drops everything, so no record (and no token fingerprint,
    /// a SHA-256 per device) is built for it. True unless a logger says otherwise.
    var isEnabled: Bool { get }
}

extension PushLogger {
    public var isEnabled: Bool { true }
}

/// One line per push: platform, transport, token fingerprint, outcome, reason, milliseconds.
public struct PushLogRecord: Sendable, Equatable, CustomStringConvertible {
    public var platform: String
    public var transport: PushTransportName
    /// First 12 hex digits of the token's SHA-256.
    public var tokenHash: String
    public var outcome: PushDeliveryOutcome
    public var reason: PushDeliveryReason?
    /// What the reason's name does not say (a provider's message), sanitized.
    public var detail: String?
    public var status: Int?
    public var milliseconds: Int
    /// Set on the dispatcher's second record for a dead token whose registration could not be
    /// removed: why, sanitized.
    public var pruneFailure: String?

    public init(
        platform: String, transport: PushTransportName, tokenHash: String, outcome: PushDeliveryOutcome, reason: PushDeliveryReason?,
        detail: String? = nil, status: Int?, milliseconds: Int, pruneFailure: String? = nil
    ) {
        self.platform = platform
        self.transport = transport
        self.tokenHash = tokenHash
        self.outcome = outcome
        self.reason = reason
        self.detail = detail
        self.status = status
        self.milliseconds = milliseconds
        self.pruneFailure = pruneFailure
    }

    /// The reason with its detail, as the log line prints it.
    public var reasonText: String? { reason.map { $0.text(detail: detail) } }

    public var description: String {
        var line = "push platform=\(platform) transport=\(transport) token=\(tokenHash) outcome=\(outcome.rawValue)"
        if let status { line += " status=\(status)" }
        if let reason { line += " reason=\(reason.text(detail: detail))" }
        line += " ms=\(milliseconds)"
        if let pruneFailure { line += " prune_failed=\(pruneFailure)" }
        return line
    }
}

/// The default logger: drops everything.
public struct SilentPushLogger: PushLogger {
    public init() {}
    public func log(_ record: PushLogRecord) {}
    public var isEnabled: Bool { false }
}
