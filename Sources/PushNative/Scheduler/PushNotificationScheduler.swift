public import PushEnvelope

/// When a hub sends which notification, as the JavaScript hub's notification hub decides it
/// (js-hub-behaviour.md §4), so a Swift hub does not spam its operator:
///
/// - **Permission requests** wait for a trailing debounce (500 ms) that starts, or restarts,
///   only when a session update brings a request id not seen before; when it fires, the session
///   is read again and its first pending request is what is sent. If none is pending any more,
///   nothing is sent (a deliberate difference: the JavaScript hub sends an empty "Permission
///   Request" then). Question tools go out as `input-request`s (the seed contract wins).
/// - **Ready** is dropped within the cooldown (5 s) of the session's previous ready; the time is
///   recorded before sending, so a failed send still starts the cooldown.
/// - **Task notifications** go out at once, every time.
/// - An **inactive or removed** session gets nothing and forgets its timer, known request ids
///   and last ready time.
///
/// The hub feeds it its events and supplies three functions: read a session as it is now, read
/// a session's recent message contents (oldest first; the last 20 are used), and deliver a
/// payload (typically `NativePush.dispatch(_:namespace:)`, then Web Push when nothing arrived).
/// The clock is injected so the timing is tested without sleeping.
public actor PushNotificationScheduler<C: Clock> where C.Duration == Duration {
    public typealias SessionReader = @Sendable (_ sessionId: String) async -> PushSession?
    public typealias MessageReader = @Sendable (_ sessionId: String) async -> [PushJSONValue]
    public typealias Delivery = @Sendable (_ payload: PushNotificationPayload) async -> Void

    public nonisolated let permissionDebounce: Duration
    public nonisolated let readyCooldown: Duration
    private let clock: C
    private let readSession: SessionReader
    private let readMessages: MessageReader
    private let deliver: Delivery

    /// Per session: the request ids of its last update, its permission timer, its last ready.
    private var knownRequestIds: [String: [String]] = [:]
    private var timers: [String: (generation: Int, task: Task<Void, Never>)] = [:]
    private var lastReady: [String: C.Instant] = [:]
    private var generation = 0
    /// Timer tasks not yet finished, by generation (what `settle()` waits for).
    private var running: [Int: (deadline: C.Instant, task: Task<Void, Never>)] = [:]

    public init(
        clock: C, permissionDebounce: Duration = .milliseconds(500), readyCooldown: Duration = .seconds(5),
        session: @escaping SessionReader, recentMessages: @escaping MessageReader, deliver: @escaping Delivery
    ) {
        self.clock = clock
        self.permissionDebounce = permissionDebounce
        self.readyCooldown = readyCooldown
        self.readSession = session
        self.readMessages = recentMessages
        self.deliver = deliver
    }

    // MARK: - Events

    /// A session was added or updated (`session-added` / `session-updated`). Inactive: its
    /// state is cleared. Active with `agentState.requests` present: the known ids are replaced
    /// by the current ones, and a new id (re)starts the permission timer. Requests null or
    /// missing: nothing changes.
    public func sessionUpdated(_ session: PushSession) {
        guard session.active else {
            clear(session.id)
            return
        }
        guard let requests = session.requests else { return }
        let current = requests.objectValue?.map(\.key) ?? []
        let known = knownRequestIds[session.id] ?? []
        let hasNew = current.contains { id in !known.contains { HubText.same($0, id) } }
        knownRequestIds[session.id] = current
        if hasNew { startTimer(session.id) }
    }

    /// A session was removed, or its update said it no longer exists: its state is cleared.
    public func sessionRemoved(id: String) {
        clear(id)
    }

    /// A message arrived (`message-received`): a ready event schedules a ready push (subject to
    /// the cooldown); a task notification in it is sent at once. Both need an active session.
    public func messageReceived(sessionId: String, content: PushJSONValue) async {
        if PushNotificationComposer.isReadyEvent(content) { await ready(sessionId) }
        guard HubMessageContent.taskNotification(in: content) != nil else { return }
        guard let session = await readSession(sessionId), session.active,
            let payload = PushNotificationComposer.taskNotification(for: session, content: content)
        else { return }
        await deliver(payload)
    }

    // MARK: - Ready

    private func ready(_ sessionId: String) async {
        guard let session = await readSession(sessionId), session.active else { return }
        let now = clock.now
        if let last = lastReady[sessionId], last.duration(to: now) < readyCooldown { return }
        lastReady[sessionId] = now  // before sending: a failed send still starts the cooldown
        let messages = await readMessages(sessionId)
        await deliver(PushNotificationComposer.ready(for: session, messages: messages))
    }

    // MARK: - Permission debounce

    private func startTimer(_ sessionId: String) {
        timers[sessionId]?.task.cancel()
        generation += 1
        let generation = self.generation
        let deadline = clock.now.advanced(by: permissionDebounce)
        let clock = self.clock
        let task = Task { [weak self] in
            do {
                try await clock.sleep(until: deadline, tolerance: nil)
                await self?.fire(sessionId, generation: generation)
            } catch {
                // Cancelled: restarted by a newer request, or the session was cleared.
            }
            await self?.finished(generation)
        }
        timers[sessionId] = (generation, task)
        running[generation] = (deadline, task)
    }

    private func fire(_ sessionId: String, generation: Int) async {
        guard timers[sessionId]?.generation == generation else { return }
        timers[sessionId] = nil
        // The session as it is now: its first pending request may not be the one that started
        // the timer, and there may be none.
        guard let session = await readSession(sessionId), session.active,
            let payload = PushNotificationComposer.pendingRequest(for: session)
        else { return }
        await deliver(payload)
    }

    private func finished(_ generation: Int) {
        running[generation] = nil
    }

    private func clear(_ sessionId: String) {
        timers.removeValue(forKey: sessionId)?.task.cancel()
        knownRequestIds[sessionId] = nil
        lastReady[sessionId] = nil
    }

    // MARK: - Tests

    /// Waits until every permission timer whose deadline has passed on the clock has fired (and
    /// delivered) and every cancelled one has ended, so a test with a manual clock can look at
    /// what was sent.
    func settle() async {
        while true {
            let now = clock.now
            let due = running.values.filter { $0.deadline <= now || $0.task.isCancelled }.map(\.task)
            guard !due.isEmpty else { return }
            for task in due { await task.value }
        }
    }

    /// Whether a permission timer is running for the session.
    func hasTimer(_ sessionId: String) -> Bool { timers[sessionId] != nil }
}

extension PushNotificationScheduler where C == ContinuousClock {
    /// A scheduler on the system's monotonic clock.
    public init(
        permissionDebounce: Duration = .milliseconds(500), readyCooldown: Duration = .seconds(5), session: @escaping SessionReader,
        recentMessages: @escaping MessageReader, deliver: @escaping Delivery
    ) {
        self.init(
            clock: ContinuousClock(), permissionDebounce: permissionDebounce, readyCooldown: readyCooldown, session: session,
            recentMessages: recentMessages, deliver: deliver)
    }
}
