import PushHTTP
import PushProviders
import PushSync

/// One worker's loop of `DeliveryPipeline.send(count:window:chunk:…)`: up to `size`
/// deliveries in flight, refilled a chunk at a time, each answer handled as it arrives.
struct ChunkedSend<Delivery: LoggableDelivery, Context: Sendable>: Sendable {
    let pipeline: DeliveryPipeline
    let batch: ProviderCall.Batch
    let size: Int
    let draft: @Sendable (Int) -> PipelineDraft<Delivery>
    let prepare: @Sendable (Delivery) -> PipelinePrepared<Context>
    let parse: @Sendable (HTTPResponse) -> ProviderAnswer
    let finish: @Sendable (Delivery, Context, ProviderExchangeResult) -> PipelineFinish

    /// What the worker hears, from the client's threads or its own tasks.
    enum Event: Sendable {
        case answered(slot: Int, HTTPClient.Outcome)
        case finished(slot: Int, PushResult)
    }

    struct Live {
        let index: Int
        let delivery: Delivery
        let request: HTTPRequest
        let context: Context
    }

    /// Claims chunks with `claim(n)` (the next at most `n` indices, nil when none are left)
    /// until none are left and nothing is in flight, each result put in `results` at its index
    /// as it ends (no worker keeps a list of its own: 10,000 results are held once).
    func run(claim: @Sendable (Int) -> Range<Int>?, into results: PipelineResults) async {
        let inbox = PipelineInbox<Event>()
        // The chunks whose requests have not all been answered, for cancellation; a chunk is
        // dropped with its last answer, so what the client kept of it is freed as the send goes.
        let started = Locked<[Int: HTTPClient.StartedBatch]>([:])
        return await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { group in
                var live: [Int: Live] = [:]
                var nextSlot = 0
                var nextChunk = 0
                /// Per chunk in `started`: its requests not yet answered.
                var unanswered: [Int: Int] = [:]
                var chunkOfSlot: [Int: Int] = [:]
                var exhausted = false
                while true {
                    // Refill once half the chunk has ended (all of it at the start).
                    while !exhausted, live.count <= size / 2 {
                        guard let indices = claim(size - live.count) else {
                            exhausted = true
                            break
                        }
                        var requests: [HTTPRequest] = []
                        var slots: [Int] = []
                        for index in indices {
                            switch draft(index) {
                            case .refused(let result): results.set(index, result)
                            case .deliver(let delivery):
                                switch prepare(delivery) {
                                case .refused(let result):
                                    pipeline.logger.log(delivery, transport: pipeline.transport, result)
                                    results.set(index, result)
                                case .send(let request, let context):
                                    live[nextSlot] = Live(index: index, delivery: delivery, request: request, context: context)
                                    requests.append(request)
                                    slots.append(nextSlot)
                                    nextSlot += 1
                                }
                            }
                        }
                        guard !requests.isEmpty else { continue }
                        let frozen = slots
                        if let handle = batch.start(requests, report: { inbox.post(.answered(slot: frozen[$0], $1)) }) {
                            let chunk = nextChunk
                            nextChunk += 1
                            unanswered[chunk] = slots.count
                            for slot in slots { chunkOfSlot[slot] = chunk }
                            started.withLock { $0[chunk] = handle }
                            // Cancelled already: the handler ran before this chunk started.
                            if Task.isCancelled { handle.cancel() }
                        } else {
                            for slot in slots { inbox.post(.finished(slot: slot, handleDeclined(live[slot]))) }
                        }
                    }
                    if live.isEmpty {
                        if exhausted { break }
                        continue
                    }
                    switch await inbox.next() {
                    case .finished(let slot, let result):
                        guard let item = live.removeValue(forKey: slot) else { continue }
                        pipeline.logger.log(item.delivery, transport: pipeline.transport, result)
                        results.set(item.index, result)
                    case .answered(let slot, let outcome):
                        if let chunk = chunkOfSlot.removeValue(forKey: slot), let left = unanswered[chunk] {
                            if left > 1 {
                                unanswered[chunk] = left - 1
                            } else {
                                unanswered[chunk] = nil
                                _ = started.withLock { $0.removeValue(forKey: chunk) }
                            }
                        }
                        guard let item = live[slot] else { continue }
                        let (exchanged, retries) = batch.read(first: outcome, parse: parse)
                        // Read here unless the policy sends it again; then in its task, after the retries.
                        let read = retries ? nil : finish(item.delivery, item.context, exchanged)
                        if case .done(let result)? = read {
                            live[slot] = nil
                            pipeline.logger.log(item.delivery, transport: pipeline.transport, result)
                            results.set(item.index, result)
                            continue
                        }
                        group.addTask { [self] in
                            let next: PipelineFinish
                            if let read {
                                next = read
                            } else {
                                next = finish(item.delivery, item.context, await batch.retry(item.request, after: outcome, parse: parse))
                            }
                            let result: PushResult
                            switch next {
                            case .done(let done): result = done
                            case .more(let more): result = await more(batch)
                            }
                            inbox.post(.finished(slot: slot, result))
                        }
                    }
                }
            }
        } onCancel: {
            for handle in started.withLock({ $0.values }) { handle.cancel() }
        }
    }

    /// The endpoint is backing off: nothing was sent; the channel reads the declined exchange.
    private func handleDeclined(_ item: Live?) -> PushResult {
        guard let item else { return .refused(.endpointBackoff) }
        switch finish(item.delivery, item.context, .declined(.endpointBackoff)) {
        case .done(let result): return result
        case .more: return .refused(.endpointBackoff)
        }
    }
}

/// A single consumer's queue of events posted from any thread: a chunked send's worker awaits
/// its next answer here, whichever of its requests (or tasks) ends first.
final class PipelineInbox<Event: Sendable>: Sendable {
    private struct State {
        var events = PushFIFO<Event>()
        var waiter: CheckedContinuation<Event, Never>?
    }

    private let state = Locked(State())

    func post(_ event: Event) {
        let waiter: CheckedContinuation<Event, Never>? = state.withLock { state in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.events.append(event)
            return nil
        }
        waiter?.resume(returning: event)
    }

    /// The oldest event not yet taken, waiting for one if none is there.
    func next() async -> Event {
        if let ready = state.withLock({ $0.events.popFirst() }) { return ready }
        return await withCheckedContinuation { continuation in
            let ready: Event? = state.withLock { state in
                if let event = state.events.popFirst() { return event }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// The results of one send, by index: written by its workers as each delivery ends, one lock
/// per write (uncontended but for the few workers of one send).
final class PipelineResults: Sendable {
    private let slots: Locked<[PushResult]>

    /// `count` slots, each written once before `take`; an unwritten one reads as never sent.
    init(count: Int) {
        slots = Locked(Array(repeating: PushResult(outcome: .failed, reason: .networkError, attempts: 0), count: count))
    }

    func set(_ index: Int, _ result: PushResult) {
        slots.withLock { $0[index] = result }
    }

    /// The results, leaving the slots empty.
    func take() -> [PushResult] {
        slots.withLock { slots in
            defer { slots = [] }
            return slots
        }
    }
}
