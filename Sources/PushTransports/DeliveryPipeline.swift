import PushHTTP
import PushProviders
import PushSync

/// The one send loop every channel (relay, APNs, FCM, Web Push) runs its deliveries through,
/// so the window, the drafting, the endpoint backoff, the retries, the in-flight gauge and the
/// log record are written once and cannot drift apart between channels. A channel supplies only
/// what is its own: a batch's one-time work (a provider token, VAPID authorizations) before it
/// calls `send`, and per delivery its checks and request (`prepare`) and its reading of the
/// answer (`finish`, which may exchange again over the batch's `ProviderCall.Batch`: the APNs
/// fresh-token resend, another VAPID identity). Pruning and the report are the caller's
/// (PushNative), one place for native and web.
///
/// No head-of-line blocking: requests start a chunk at a time, but each answer is read as it
/// arrives and frees its own slot; every request has its own deadline, and a retry waits only
/// for its own backoff.
struct DeliveryPipeline: Sendable {
    /// What the log record and the in-flight gauge call this channel.
    let transport: PushTransportName
    /// How each request travels: the endpoint backoff, the retry policy, the in-flight gauge.
    let call: ProviderCall
    let logger: any PushLogger
    /// Deliveries in flight at once for one batch.
    let concurrency: Int

    init(
        _ transport: PushTransportName, client: HTTPClient, policy: PushRetryPolicy, backoff: EndpointBackoff = EndpointBackoff(), logger: any PushLogger,
        concurrency: Int, metrics: (any PushMetricsFactory)?
    ) {
        self.transport = transport
        self.call = ProviderCall(client: client, policy: policy, backoff: backoff, inFlight: ProviderCall.inFlightMeter(metrics, transport: transport))
        self.logger = logger
        self.concurrency = concurrency
    }

    /// Sends `count` deliveries, at most `min(concurrency, window)` in flight, so that making
    /// them (Web Push seals each message) uses every core and sending them costs one hand-off
    /// to the client per chunk: `limit / chunk` workers each keep up to `chunk` deliveries
    /// in flight, and refill with a new chunk (drafted, `prepare`d, started together by `ProviderCall.Batch.start`)
    /// once half of theirs have ended. Each answer is read as it arrives, never waiting for its
    /// chunk: `finish` reads it, and a delivery that needs more (a retry by the policy, another
    /// exchange of the channel's own) goes on in a task of its own. So a request that is never
    /// answered holds only its own slot. A refusal while drafting is answered as is; one while
    /// preparing is logged. Results in index order.
    func send<Delivery: LoggableDelivery, Context: Sendable>(
        count: Int, window: Int, chunk: Int, draft: @escaping @Sendable (Int) -> PipelineDraft<Delivery>,
        prepare: @escaping @Sendable (Delivery) -> PipelinePrepared<Context>, parse: @escaping @Sendable (HTTPResponse) -> ProviderAnswer,
        finish: @escaping @Sendable (Delivery, Context, ProviderExchangeResult) -> PipelineFinish
    ) async -> [PushResult] {
        guard count > 0 else { return [] }
        let batch = call.batch()
        let limit = max(1, min(concurrency, window))
        let size = max(1, min(chunk, limit))
        let next = Locked(0)
        let claim: @Sendable (Int) -> Range<Int>? = { wanted in
            next.withLock { value in
                guard value < count else { return nil }
                let end = min(count, value + wanted)
                defer { value = end }
                return value..<end
            }
        }
        let chunked = ChunkedSend(
            pipeline: self, batch: batch, size: size, draft: draft, prepare: prepare, parse: parse, finish: finish)
        let workers = min(max(1, limit / size), (count + size - 1) / size)
        let results = PipelineResults(count: count)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<workers { group.addTask { await chunked.run(claim: claim, into: results) } }
        }
        return results.take()
    }

    /// Every delivery of a batch failed before any request (no provider token, no OAuth token):
    /// each drafted delivery gets `result` and is logged; one refused while drafting keeps its own.
    func refuseAll<Delivery: LoggableDelivery>(count: Int, draft: (Int) -> PipelineDraft<Delivery>, _ result: PushResult) -> [PushResult] {
        (0..<count).map { index in
            switch draft(index) {
            case .refused(let own): return own
            case .deliver(let delivery):
                logger.log(delivery, transport: transport, result)
                return result
            }
        }
    }
}

/// One delivery made ready to send (`DeliveryPipeline.send(count:window:chunk:…)`): its request
/// and what the channel keeps to read the answer, or the result it failed with before sending.
enum PipelinePrepared<Context: Sendable>: Sendable {
    case send(HTTPRequest, Context)
    case refused(PushResult)
}

/// What a chunked send's channel makes of a first answer: the result, or more to do first
/// (another exchange of its own over the batch), run in a task of its own.
enum PipelineFinish: Sendable {
    case done(PushResult)
    case more(@Sendable (ProviderCall.Batch) async -> PushResult)
}

/// One delivery as a channel's caller hands it to the pipeline, made at the moment it can be sent.
package enum PipelineDraft<Delivery: Sendable>: Sendable {
    case deliver(Delivery)
    /// Failed before any request (no envelope could be sealed): the result to report.
    case refused(PushResult)
}
