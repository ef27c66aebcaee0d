import PushSync

/// Registrations in process memory: for hubs that bring their own persistence (wrap this or
/// implement `PushDeviceStore`) and for fast tests. Same semantics as the SQLite store.
public final class InMemoryPushDeviceStore: PushDeviceStore {
    private let rows = Locked<[PushDeviceRegistration]>([])

    public init() {}

    public func upsert(_ request: PushRegistrationRequest, now: Int64) -> PushDeviceRegistration {
        rows.withLock { rows in
            let existing = rows.first {
                $0.namespace == request.namespace && $0.deviceId == request.deviceId && $0.platform == request.platform
            }
            rows.removeAll {
                $0.token == request.token
                    || ($0.namespace == request.namespace && $0.deviceId == request.deviceId && $0.platform == request.platform)
            }
            let registration = PushDeviceRegistration(
                namespace: request.namespace, deviceId: request.deviceId, platform: request.platform, token: request.token,
                pushKey: request.pushKey, createdAt: existing?.createdAt ?? now, updatedAt: now)
            rows.append(registration)
            return registration
        }
    }

    @discardableResult
    public func unregister(namespace: String, token: String) -> Bool {
        rows.withLock { rows in
            let before = rows.count
            rows.removeAll { $0.namespace == namespace && Self.matches($0, token) }
            return rows.count != before
        }
    }

    @discardableResult
    public func prune(namespace: String, token: String, notAfter: Int64?) -> Bool {
        rows.withLock { rows in
            let before = rows.count
            rows.removeAll { row in row.namespace == namespace && row.token == token && row.updatedAt <= (notAfter ?? Int64.max) }
            return rows.count != before
        }
    }

    public func devices(namespace: String, platforms: Set<PushDevicePlatform>?) -> [PushDeviceRegistration] {
        rows.withLock { rows in
            rows.enumerated()
                .filter { $0.element.namespace == namespace && (platforms?.contains($0.element.platform) ?? true) }
                // Newest first; among equal timestamps the later insert first, as SQLite orders by rowid.
                .sorted { $0.element.updatedAt != $1.element.updatedAt ? $0.element.updatedAt > $1.element.updatedAt : $0.offset > $1.offset }
                .map(\.element)
        }
    }

    /// iOS tokens are stored lowercase; an unregister may send them in either case.
    static func matches(_ row: PushDeviceRegistration, _ token: String) -> Bool {
        row.token == token || (row.platform == .ios && row.token == token.lowercased())
    }
}
