/// Sends one notification to every registered native device of a namespace and reports what
/// happened, pruning tokens the provider declared dead.
///
/// A dispatch never throws for a device-level problem: those are per-device outcomes. It
/// throws only when the registry itself cannot be read.
public struct PushDispatcher: Sendable {
    /// How iPhones are reached.
    public enum IOSChannel: Sendable {
        /// The relay or direct APNs: always an envelope under the device's key.
        case encrypted(any PushTransport)
        case off(reason: String)
    }

    /// How Android phones and watches are reached.
    public enum AndroidChannel: Sendable {
        /// Direct FCM: the payload as plaintext data, phones and watches alike.
        case plaintext(any PushTransport)
        /// The relay: an envelope, for phones that registered a key; watches are not reachable.
        case encrypted(any PushTransport)
        case off(reason: String)
    }

    public let store: any DeviceStore
    public let ios: IOSChannel
    public let android: AndroidChannel

    public init(store: any DeviceStore, ios: IOSChannel, android: AndroidChannel) {
        self.store = store
        self.ios = ios
        self.android = android
    }

    /// One device's planned send, or the reason it has none.
    private enum Plan {
        case send(transport: any PushTransport, delivery: PushDelivery, level: PayloadFitter.Level)
        case done(outcome: DispatchReport.Delivery.Outcome, transport: String, reason: String)
    }

    /// Sends `payload` to every device of `namespace`.
    public func dispatch(_ payload: NotificationPayload, namespace: String) async throws -> DispatchReport {
        let devices = try await store.devices(namespace: namespace)
        let plans = devices.map { plan(payload, for: $0) }

        // Group by transport, send each group as one batch, all groups at once.
        var groups: [String: (transport: any PushTransport, indices: [Int])] = [:]
        for (index, plan) in plans.enumerated() {
            guard case .send(let transport, _, _) = plan else { continue }
            groups[transport.name, default: (transport, [])].indices.append(index)
        }
        let results = await withTaskGroup(of: [(Int, PushResult)].self) { group in
            for (_, entry) in groups {
                let deliveries = entry.indices.compactMap { index -> PushDelivery? in
                    if case .send(_, let delivery, _) = plans[index] { return delivery }
                    return nil
                }
                group.addTask { Array(zip(entry.indices, await entry.transport.send(deliveries))) }
            }
            var byIndex: [Int: PushResult] = [:]
            for await batch in group { for (index, result) in batch { byIndex[index] = result } }
            return byIndex
        }

        var reports: [DispatchReport.Delivery] = []
        reports.reserveCapacity(devices.count)
        for (index, device) in devices.enumerated() {
            var report = DispatchReport.Delivery(
                platform: device.platform, deviceId: device.deviceId, tokenHash: device.tokenHash, transport: "none", outcome: .skipped,
                reason: nil, status: nil, latencyMilliseconds: 0, pruned: false, payload: nil)
            switch plans[index] {
            case .done(let outcome, let transport, let reason):
                report.outcome = outcome
                report.transport = transport
                report.reason = reason
            case .send(let transport, let delivery, let level):
                report.transport = transport.name
                let result = results[index] ?? PushResult(outcome: .failed, reason: "no_result")
                report.reason = result.reason
                report.status = result.status
                report.latencyMilliseconds = Self.milliseconds(result.latency)
                switch result.outcome {
                case .sent:
                    report.outcome = .sent
                    report.payload = level
                case .failed:
                    report.outcome = .failed
                case .invalid:
                    report.outcome = .invalid
                    // Only an explicit token death prunes, and only that token in this namespace.
                    report.pruned =
                        (try? await store.prune(namespace: namespace, token: delivery.token, notAfter: result.invalidSince)) ?? false
                }
            }
            reports.append(report)
        }
        return DispatchReport(deliveries: reports)
    }

    private func plan(_ payload: NotificationPayload, for device: DeviceRegistration) -> Plan {
        let collapseId = "\(payload.type.rawValue)-\(payload.sessionId)"
        switch device.platform {
        case .ios:
            switch ios {
            case .off(let reason):
                return .done(outcome: .skipped, transport: "none", reason: "channel_off: \(reason)")
            case .encrypted(let transport):
                return encrypted(payload, device: device, target: .ios, transport: transport, collapseId: collapseId)
            }
        case .phone, .wear:
            switch android {
            case .off(let reason):
                return .done(outcome: .skipped, transport: "none", reason: "channel_off: \(reason)")
            case .encrypted(let transport):
                guard device.platform == .phone else {
                    return .done(outcome: .skipped, transport: transport.name, reason: "wear_relay_unsupported")
                }
                return encrypted(payload, device: device, target: .androidPhone, transport: transport, collapseId: collapseId)
            case .plaintext(let transport):
                guard let (fitted, level) = PayloadFitter.fitFCMData(payload) else {
                    return .done(outcome: .failed, transport: transport.name, reason: "too_large")
                }
                let delivery = PushDelivery(
                    target: device.platform == .wear ? .wear : .androidPhone, token: device.token, content: .plaintext(fitted),
                    collapseId: collapseId)
                return .send(transport: transport, delivery: delivery, level: level)
            }
        }
    }

    private func encrypted(
        _ payload: NotificationPayload, device: DeviceRegistration, target: PushDelivery.Target, transport: any PushTransport,
        collapseId: String
    ) -> Plan {
        guard let key = device.pushKey else {
            return .done(outcome: .skipped, transport: transport.name, reason: "missing_push_key")
        }
        guard let (fitted, level) = PayloadFitter.fitEnvelope(payload) else {
            // Even the minimal notification exceeds the cap: this device fails, its row stays.
            return .done(outcome: .failed, transport: transport.name, reason: "too_large")
        }
        let envelope: String
        do {
            envelope = try PushEnvelope.seal(fitted.canonicalJSON, key: key)  // a fresh nonce per device
        } catch {
            return .done(outcome: .failed, transport: transport.name, reason: "seal_failed: \(error.message)")
        }
        let delivery = PushDelivery(target: target, token: device.token, content: .envelope(envelope), collapseId: collapseId)
        return .send(transport: transport, delivery: delivery, level: level)
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
