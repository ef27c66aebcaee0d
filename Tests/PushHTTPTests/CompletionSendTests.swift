import PushLoopbackServer
import PushSync
import Testing

@testable import PushHTTP

// `HTTPClient.send(_:completion:)`: the relay's way in, with no task and no suspension. Each
// request's completion runs once, off any Swift task (the engine's thread), with the same
// results as the async form; a request refused at once is answered before `send` returns.
@Suite(.serialized) struct CompletionSendTests {
    @Test func everyCompletionRunsOnceOnTheEngineThreadWithItsOwnResponse() async throws {
        let server = try LoopbackServer(transport: .tls, handler: HTTPClientTests.echo)
        defer { server.stop() }
        let client = try HTTPClient(configuration: HTTPClientTests.trusting(server))
        let count = 300
        let seen = Locked<[Int: Int]>([:])
        let onTask = Locked(0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for index in 0..<count {
                client.send(HTTPRequest(method: .post, url: server.baseURL + "/c/\(index)", body: Array("\(index)".utf8))) { result in
                    if withUnsafeCurrentTask(body: { $0 != nil }) { onTask.withLock { $0 += 1 } }
                    let echoed = (try? result.get()).map { String(decoding: $0.body, as: UTF8.self) } ?? "failed"
                    let finished = seen.withLock { seen -> Bool in
                        seen[index, default: 0] += 1
                        #expect(echoed.contains("\(index)"))
                        return seen.count == count && seen[index] == 1
                    }
                    if finished { done.resume() }
                }
            }
        }
        // Nothing late: every slot once.
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.withLock { $0.values.allSatisfy { $0 == 1 } && $0.count == count })
        #expect(onTask.withLock { $0 } == 0)
        #expect(server.requestsHandled == count)
        await client.shutdown()
    }

    @Test func aRequestRefusedAtOnceIsAnsweredBeforeSendReturns() async throws {
        let client = try HTTPClient()
        let refused = Locked<HTTPClientError?>(nil)
        client.send(HTTPRequest(url: "ftp://example.invalid/")) { result in
            if case .failure(let error) = result { refused.withLock { $0 = error } }
        }
        #expect(refused.withLock { $0 } != nil)
        await client.shutdown()
        let afterShutdown = Locked<HTTPClientError?>(nil)
        client.send(HTTPRequest(url: "https://127.0.0.1:9/")) { result in
            if case .failure(let error) = result { afterShutdown.withLock { $0 = error } }
        }
        #expect(afterShutdown.withLock { $0 } == .shutdown)
    }
}
