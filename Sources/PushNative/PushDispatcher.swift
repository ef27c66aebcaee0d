package import DeviceRegistry
package import PushEnvelope
package import PushTransports

/// Sends one notification to every registered native device of a namespace and reports what
/// happened, pruning tokens the provider declared dead.
///
/// A dispatch never throws for a device-level problem: those are per-device outcomes. It
/// throws only when the registry itself cannot be read.
package struct PushDispatcher: Sendable {
    /// How iPhones are reached.
    package enum IOSChannel: Sendable {
        /// The relay or direct APNs: always an envelope under the device's key.
        case encrypted(any PushTransport)
        case off(reason: String)
    }

    /// How Android phones and watches are reached.
    package enum AndroidChannel: Sendable {
        /// Direct FCM: the payload as plaintext data, phones and watches alike.
        case plaintext(any PushTransport)
        /// The relay: an envelope, for phones that registered a key; watches are not reachable.
        case encrypted(any PushTransport)
        case off(reason: String)
    }

    package let store: any PushDeviceStore
    package let ios: IOSChannel
    package let android: AndroidChannel
    /// Where a failed prune is reported (the transports log each push themselves).
    package let logger: any PushLogger
    /// Deliveries by transport, outcome and reason; latency per transport.
    let metrics: DispatchMetrics

    package init(
        store: any PushDeviceStore, ios: IOSChannel, android: AndroidChannel, logger: any PushLogger = SilentPushLogger(),
        metrics: (any PushMetricsFactory)? = nil, window: Int = PushDispatcher.defaultWindow
    ) {
        self.window = max(1, window)
        self.store = store
        self.ios = ios
        self.android = android
        self.logger = logger
        self.metrics = DispatchMetrics(metrics)
    }

    /// Which channel a planned send goes through: each channel's transport gets one batch.
    /// (Grouping by channel rather than by transport name keeps two relays of different URLs,
    /// one per platform, apart.)
    private enum Channel: CaseIterable {
        case ios
        case android
    }

    /// One device's planned send, or the reason it has none.
    private enum Plan {
        case send(channel: Channel, transport: any PushTransport, delivery: PushDelivery, level: PushPayloadLevel)
        case done(outcome: PushDispatchReport.Delivery.Outcome, transport: PushTransportName, reason: PushDeliveryReason, detail: String? = nil)
    }

    /// The payload fitted once per dispatch for each path: every device of a path gets the
    /// same plaintext (only the nonce and the key differ between envelopes).
    private struct Fitted {
        /// The sealed paths: the fitted payload's canonical JSON and its level.
        let envelope: (plaintext: [UInt8], level: PushPayloadLevel)?
        /// Direct FCM: the fitted payload and its level.
        let fcm: (payload: PushNotificationPayload, level: PushPayloadLevel)?

        init(_ payload: PushNotificationPayload) {
            envelope = PayloadFitter.fitEnvelope(payload).map { ($0.0.canonicalJSON, $0.1) }
            fcm = PayloadFitter.fitFCMData(payload)
        }
    }

    /// Devices planned, sealed and sent together. A namespace larger than this goes out in
    /// windows one after another, so a dispatch to 100,000 devices holds 2,048 envelopes and
    /// requests at a time, not 100,000.
    package static let defaultWindow = 2048
    let window: Int

    /// Sends `payload` to every device of `namespace`.
    package func dispatch(_ payload: PushNotificationPayload, namespace: String) async throws -> PushDispatchReport {
        let devices = try await store.devices(namespace: namespace)
        let fitted = Fitted(payload)
        let collapseId = "\(payload.type.rawValue)-\(payload.sessionId)"
        var reports: [PushDispatchReport.Delivery] = []
        reports.reserveCapacity(devices.count)
        for start in stride(from: 0, to: devices.count, by: window) {
            let slice = devices[start..<min(start + window, devices.count)]
            reports += await dispatch(slice, fitted: fitted, collapseId: collapseId, namespace: namespace)
        }
        return PushDispatchReport(deliveries: reports)
    }

    private func dispatch(
        _ devices: ArraySlice<PushDeviceRegistration>, fitted: Fitted, collapseId: String, namespace: String
    ) async -> [PushDispatchReport.Delivery] {
        let devices = Array(devices)
        let plans = devices.map { plan(for: $0, fitted: fitted, collapseId: collapseId) }

        // One batch per channel, both channels at once.
        var batches: [(transport: any PushTransport, indices: [Int])] = []
        for channel in Channel.allCases {
            var transport: (any PushTransport)?
            var indices: [Int] = []
            for (index, plan) in plans.enumerated() {
                guard case .send(channel, let planned, _, _) = plan else { continue }
                transport = planned
                indices.append(index)
            }
            if let transport { batches.append((transport, indices)) }
        }
        let results = await withTaskGroup(of: [(Int, PushResult)].self) { group in
            for batch in batches {
                let deliveries = batch.indices.compactMap { index -> PushDelivery? in
                    if case .send(_, _, let delivery, _) = plans[index] { return delivery }
                    return nil
                }
                group.addTask { Array(zip(batch.indices, await batch.transport.send(deliveries))) }
            }
            var byIndex = [PushResult?](repeating: nil, count: plans.count)
            for await batch in group { for (index, result) in batch { byIndex[index] = result } }
            return byIndex
        }

        var reports: [PushDispatchReport.Delivery] = []
        reports.reserveCapacity(devices.count)
        for (index, device) in devices.enumerated() {
            var report = PushDispatchReport.Delivery(
                platform: device.platform, deviceId: device.deviceId, tokenHash: device.tokenHash, transport: .none, outcome: .skipped,
                reason: nil, detail: nil, status: nil, latencyMilliseconds: 0, pruned: false, payload: nil)
            switch plans[index] {
            case .done(let outcome, let transport, let reason, let detail):
                report.outcome = outcome
                report.transport = transport
                report.reason = reason
                report.detail = detail
                metrics.delivered(report, sent: false, latency: .zero)
            case .send(_, let transport, let delivery, let level):
                report.transport = transport.name
                let result = results[index] ?? PushResult(outcome: .failed, reason: .noResult)
                report.record(result)
                switch result.outcome {
                case .sent:
                    report.payload = level
                case .failed, .skipped:
                    break
                case .invalid:
                    // Only an explicit token death prunes, and only that token in this namespace.
                    // A store that fails here leaves a dead registration behind: said in the
                    // report and the log, so the next dispatch (or an operator) can deal with it.
                    do {
                        report.pruned = try await store.prune(namespace: namespace, token: delivery.token, notAfter: result.invalidSince)
                    } catch {
                        let failure = SafeText.sanitize(String(describing: error), limit: 200, redactingTokens: true, secrets: [delivery.token])
                        report.pruneFailure = failure
                        metrics.pruneFailed(transport.name)
                        logger.log(
                            PushLogRecord(
                                platform: delivery.target.rawValue, transport: transport.name, tokenHash: device.tokenHash, outcome: .invalid,
                                reason: result.reason, detail: result.detail, status: result.status, milliseconds: report.latencyMilliseconds,
                                pruneFailure: failure))
                    }
                }
                metrics.delivered(report, sent: result.attempts > 0, latency: result.latency)
            }
            reports.append(report)
        }
        return reports
    }

    private func plan(for device: PushDeviceRegistration, fitted: Fitted, collapseId: String) -> Plan {
        switch device.platform {
        case .ios:
            switch ios {
            case .off(let reason):
                return .done(outcome: .skipped, transport: .none, reason: .channelOff, detail: reason)
            case .encrypted(let transport):
                return encrypted(fitted, device: device, target: .ios, channel: .ios, transport: transport, collapseId: collapseId)
            }
        case .phone, .wear:
            switch android {
            case .off(let reason):
                return .done(outcome: .skipped, transport: .none, reason: .channelOff, detail: reason)
            case .encrypted(let transport):
                guard device.platform == .phone else {
                    return .done(outcome: .skipped, transport: transport.name, reason: .wearRelayUnsupported)
                }
                return encrypted(fitted, device: device, target: .androidPhone, channel: .android, transport: transport, collapseId: collapseId)
            case .plaintext(let transport):
                guard let (payload, level) = fitted.fcm else {
                    return .done(outcome: .failed, transport: transport.name, reason: .tooLarge)
                }
                let delivery = PushDelivery(
                    target: device.platform == .wear ? .wear : .androidPhone, token: device.token, content: .plaintext(payload),
                    collapseId: collapseId)
                return .send(channel: .android, transport: transport, delivery: delivery, level: level)
            }
        }
    }

    private func encrypted(
        _ fitted: Fitted, device: PushDeviceRegistration, target: PushDelivery.Target, channel: Channel, transport: any PushTransport,
        collapseId: String
    ) -> Plan {
        guard let key = device.pushKey else {
            return .done(outcome: .skipped, transport: transport.name, reason: .missingPushKey)
        }
        guard let (plaintext, level) = fitted.envelope else {
            // Even the minimal notification exceeds the cap: this device fails, its row stays.
            return .done(outcome: .failed, transport: transport.name, reason: .tooLarge)
        }
        let envelope: String
        do {
            envelope = try PushEnvelopeCipher.seal(plaintext, key: key)  // a fresh nonce per device
        } catch {
            return .done(outcome: .failed, transport: transport.name, reason: .sealFailed, detail: error.message)
        }
        let delivery = PushDelivery(target: target, token: device.token, content: .envelope(envelope), collapseId: collapseId)
        return .send(channel: channel, transport: transport, delivery: delivery, level: level)
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
