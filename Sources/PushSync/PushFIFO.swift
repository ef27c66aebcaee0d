/// A first-in, first-out queue over an array with a moving head, so taking from the front
/// costs no shift; the front can take one back (a retry goes first again). Used where one
/// owner drains what others fill: the HTTP/2 loop's waiting requests, a send's answers.
package struct PushFIFO<Element> {
    private var entries: [Element] = []
    private var head = 0

    package init() {}

    package var isEmpty: Bool { head >= entries.count }
    package var count: Int { entries.count - head }

    package mutating func append(_ element: Element) { entries.append(element) }

    /// Puts `element` in front of everything queued.
    package mutating func prepend(_ element: Element) {
        if head > 0 {
            head -= 1
            entries[head] = element
        } else {
            entries.insert(element, at: 0)
        }
    }

    package mutating func popFirst() -> Element? {
        guard head < entries.count else { return nil }
        let element = entries[head]
        head += 1
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= entries.count {
            // Taken entries are not kept for ever behind a queue that never empties.
            entries.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Removes and returns every element for which `isRemoved` holds, keeping the others' order.
    package mutating func removeAll(where isRemoved: (Element) -> Bool) -> [Element] {
        var kept: [Element] = []
        var removed: [Element] = []
        for element in entries[head...] {
            if isRemoved(element) { removed.append(element) } else { kept.append(element) }
        }
        if !removed.isEmpty {
            entries = kept
            head = 0
        }
        return removed
    }

    /// Everything queued, oldest first, leaving the queue empty.
    package mutating func takeAll() -> [Element] {
        defer {
            entries = []
            head = 0
        }
        return Array(entries[head...])
    }
}

extension PushFIFO: Sendable where Element: Sendable {}
