/// A way out of the hub: the relay, direct APNs or direct FCM. The dispatcher hands each
/// transport the batch of deliveries for one event; the transport sends them concurrently and
/// answers one `PushResult` per delivery, in order. It never throws: every problem is a
/// per-device `failed`.
///
/// A batch, not single sends, so per-batch work happens once: the APNs provider token and the
/// FCM access token are fetched once, and an OAuth failure fails the batch once instead of once
/// per device.
package protocol PushTransport: Sendable {
    /// `relay`, `apns` or `fcm`: what reports and logs call it.
    var name: PushTransportName { get }
    func send(_ deliveries: [PushDelivery]) async -> [PushResult]
}

/// Splits a batch into chunks of at most `concurrency / 4` and sends up to four at once, so
/// at most `concurrency` requests of one dispatch are in flight (each with its own timeout,
/// counted from its own chunk's submission) while the wire never idles between chunks.
func inChunks<Result: Sendable>(
    _ deliveries: [PushDelivery], concurrency: Int, _ operation: @escaping @Sendable ([PushDelivery]) async -> [Result]
) async -> [Result] {
    let size = max(1, concurrency / 4)
    guard deliveries.count > size else { return await operation(deliveries) }
    let chunks = stride(from: 0, to: deliveries.count, by: size).map { Array(deliveries[$0..<min($0 + size, deliveries.count)]) }
    return await boundedConcurrentMap(chunks, limit: 4, operation).flatMap { $0 }
}

/// Runs `operation` for every element with at most `limit` in flight, returning results in
/// input order. One slow element delays only itself.
func boundedConcurrentMap<Element: Sendable, Result: Sendable>(
    _ elements: [Element], limit: Int, _ operation: @escaping @Sendable (Element) async -> Result
) async -> [Result] {
    guard !elements.isEmpty else { return [] }
    return await withTaskGroup(of: (Int, Result).self) { group in
        var results = [Result?](repeating: nil, count: elements.count)
        var next = 0
        let width = max(1, limit)
        while next < elements.count && next < width {
            let index = next
            group.addTask { (index, await operation(elements[index])) }
            next += 1
        }
        while let (index, result) = await group.next() {
            results[index] = result
            if next < elements.count {
                let index = next
                group.addTask { (index, await operation(elements[index])) }
                next += 1
            }
        }
        return results.compactMap { $0 }
    }
}

extension String {
    /// `https://host/` and `https://host//` name the same base as `https://host`.
    var droppingTrailingSlashes: String {
        var text = self
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}
