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
    /// Where a failed prune is reported (the transports' pipeline logs each push itself).
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
    private enum Channel: CaseIterable, Sendable {
        case ios
        case android
    }

    /// One device's planned send, or the reason it has none. Envelopes are not sealed here:
    /// the transport drafts each delivery when its window has room (`draft(_:)`).
    private enum Plan: Sendable {
        case send(channel: Channel, transport: any PushTransport, target: PushDelivery.Target, content: Content, level: PushPayloadLevel)
        case done(outcome: PushDeliveryOutcome, transport: PushTransportName, reason: PushDeliveryReason, detail: String? = nil)
    }

    /// What a planned send will carry.
    private enum Content: Sendable {
        /// The fitted payload's canonical JSON, sealed under this key when drafted.
        case seal(PushKey, plaintext: [UInt8])
        case plaintext(PushNotificationPayload)
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

    /// At most this many deliveries of one channel are drafted (sealed) and unfinished at a
    /// time, whatever the namespace's size: a dispatch to 100,000 devices holds a window's
    /// envelopes and requests, not 100,000. The window refills as each delivery ends.
    package static let defaultWindow = 2048
    let window: Int

    /// Sends `payload` to every device of `namespace`.
    package func dispatch(_ payload: PushNotificationPayload, namespace: String) async throws -> PushDispatchReport {
        let devices = try await store.devices(namespace: namespace)
        let fitted = Fitted(payload)
        let collapseId = "\(payload.type.rawValue)-\(payload.sessionId)"
        let plans = devices.map { plan(for: $0, fitted: fitted) }

        // One batch per channel, both channels at once; each delivery is reported as it ends.
        var batches: [(channel: Channel, transport: any PushTransport, indices: [Int])] = []
        for channel in Channel.allCases {
            var transport: (any PushTransport)?
            var indices: [Int] = []
            for (index, plan) in plans.enumerated() {
                guard case .send(channel, let planned, _, _, _) = plan else { continue }
                transport = planned
                indices.append(index)
            }
            if let transport { batches.append((channel, transport, indices)) }
        }
        let window = self.window
        // Each channel's results in its batch's order, which is the devices' order: read back
        // with a cursor per channel below, so no array of every result by device is made.
        let results: [Channel: [PushResult]] = await withTaskGroup(of: (Channel, [PushResult]).self) { group in
            for batch in batches {
                group.addTask {
                    let results = await batch.transport.send(count: batch.indices.count, window: window) { position in
                        let index = batch.indices[position]
                        return Self.draft(plans[index], token: devices[index].token, collapseId: collapseId)
                    }
                    return (batch.channel, results)
                }
            }
            var byChannel: [Channel: [PushResult]] = [:]
            for await (channel, results) in group { byChannel[channel] = results }
            return byChannel
        }
        var cursors: [Channel: Int] = [:]

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
            case .send(let channel, let transport, let target, _, let level):
                report.transport = transport.name
                let position = cursors[channel, default: 0]
                cursors[channel] = position + 1
                let result = results[channel].flatMap { position < $0.count ? $0[position] : nil } ?? PushResult(outcome: .failed, reason: .noResult)
                report.record(result)
                switch result.outcome {
                case .sent:
                    report.payload = level
                case .failed, .skipped:
                    break
                case .invalid:
                    // Only an explicit token death prunes, and only that token in this namespace.
                    let pruned = await reporter.prune(
                        result, transport: transport.name, platform: target.rawValue, tokenHash: device.tokenHash, secrets: [device.token]
                    ) { try await store.prune(namespace: namespace, token: device.token, notAfter: result.invalidSince) }
                    report.pruned = pruned.removed
                    report.pruneFailure = pruned.failure
                }
                reporter.delivered(result, transport: transport.name)
            }
            reports.append(report)
        }
        return PushDispatchReport(deliveries: reports)
    }

    /// The delivery of a planned send, made when the transport is ready for it: the envelope
    /// is sealed here (a fresh nonce per device), on whichever core runs the transport's task.
    private static func draft(_ plan: Plan, token: String, collapseId: String) -> PushDraft {
        guard case .send(_, _, let target, let content, _) = plan else { return .refused(PushResult(outcome: .failed, reason: .noResult, attempts: 0)) }
        switch content {
        case .seal(let key, let plaintext):
            do {
                let envelope = try PushEnvelopeCipher.seal(plaintext, key: key)
                return .deliver(PushDelivery(target: target, token: token, content: .envelope(envelope), collapseId: collapseId))
            } catch {
                return .refused(PushResult(outcome: .failed, reason: .sealFailed, detail: error.message, attempts: 0))
            }
        case .plaintext(let payload):
            return .deliver(PushDelivery(target: target, token: token, content: .plaintext(payload), collapseId: collapseId))
        }
    }

    private func plan(for device: PushDeviceRegistration, fitted: Fitted) -> Plan {
        switch device.platform {
        case .ios:
            switch ios {
            case .off(let reason):
                return .done(outcome: .skipped, transport: .none, reason: .channelOff, detail: reason)
            case .encrypted(let transport):
                return encrypted(fitted, device: device, target: .ios, channel: .ios, transport: transport)
            }
        case .phone, .wear:
            switch android {
            case .off(let reason):
                return .done(outcome: .skipped, transport: .none, reason: .channelOff, detail: reason)
            case .encrypted(let transport):
                guard device.platform == .phone else {
                    return .done(outcome: .skipped, transport: transport.name, reason: .wearRelayUnsupported)
                }
                return encrypted(fitted, device: device, target: .androidPhone, channel: .android, transport: transport)
            case .plaintext(let transport):
                guard let (payload, level) = fitted.fcm else {
                    return .done(outcome: .failed, transport: transport.name, reason: .tooLarge)
                }
                return .send(
                    channel: .android, transport: transport, target: device.platform == .wear ? .wear : .androidPhone, content: .plaintext(payload),
                    level: level)
            }
        }
    }

    private func encrypted(
        _ fitted: Fitted, device: PushDeviceRegistration, target: PushDelivery.Target, channel: Channel, transport: any PushTransport
    ) -> Plan {
        guard let key = device.pushKey else {
            return .done(outcome: .skipped, transport: transport.name, reason: .missingPushKey)
        }
        guard let (plaintext, level) = fitted.envelope else {
            // Even the minimal notification exceeds the cap: this device fails, its row stays.
            return .done(outcome: .failed, transport: transport.name, reason: .tooLarge)
        }
        return .send(channel: channel, transport: transport, target: target, content: .seal(key, plaintext: plaintext), level: level)
    }

    /// Where each delivery's result goes after the transport: the metrics and the prune.
    var reporter: DeliveryReporter { DeliveryReporter(logger: logger, metrics: metrics) }
}
