/// Token buckets keyed by string in bounded memory. When a new key arrives at `capacity`, idle
/// buckets (refilled to full, so forgetting them changes nothing) are dropped first; if that
/// frees less than a sixteenth of the table, the least recently used go too, so the full sweep
/// runs at most once per `capacity / 16` new keys.
///
/// A value type without locking: `InMemoryPushRelayRateLimiter` holds it behind a lock.
struct TokenBucketTable {
    private struct Entry {
        var key: String
        var tokens: Double
        var updatedAt: Double
        /// Neighbours in recency order (-1: none); `newer` points towards `newest`.
        var newer: Int
        var older: Int
    }

    let limit: PushRelayRateLimit
    let capacity: Int
    private var entries: [Entry] = []
    private var index: [String: Int] = [:]
    private var free: [Int] = []
    private var newest = -1
    private var oldest = -1

    init(limit: PushRelayRateLimit, capacity: Int) {
        self.limit = limit
        self.capacity = max(1, capacity)
    }

    /// Keys currently held.
    var count: Int { index.count }

    private var refillPerSecond: Double { Double(limit.perMinute) / 60 }

    /// Takes one token from `key`'s bucket at `now` (seconds, monotonic); false when empty.
    mutating func take(_ key: String, now: Double) -> Bool {
        if let slot = index[key] {
            var entry = entries[slot]
            entry.tokens = level(entry, now: now)
            entry.updatedAt = max(entry.updatedAt, now)
            let allowed = entry.tokens >= 1
            if allowed { entry.tokens -= 1 }
            entries[slot] = entry
            touch(slot)
            return allowed
        }
        if index.count >= capacity { makeRoom(now: now) }
        insert(Entry(key: key, tokens: Double(limit.burst) - 1, updatedAt: now, newer: -1, older: -1))
        return true
    }

    /// Whether `key` is held (for tests of eviction).
    func contains(_ key: String) -> Bool { index[key] != nil }

    private func level(_ entry: Entry, now: Double) -> Double {
        let elapsed = max(0, now - entry.updatedAt)
        return min(Double(limit.burst), entry.tokens + elapsed * refillPerSecond)
    }

    private mutating func makeRoom(now: Double) {
        let target = max(1, capacity / 16)
        var freed = 0
        var slot = oldest
        while slot >= 0 {
            let next = entries[slot].newer
            if level(entries[slot], now: now) >= Double(limit.burst) {
                remove(slot)
                freed += 1
            }
            slot = next
        }
        while freed < target, oldest >= 0 {
            remove(oldest)
            freed += 1
        }
    }

    private mutating func insert(_ entry: Entry) {
        let slot: Int
        if let reused = free.popLast() {
            entries[reused] = entry
            slot = reused
        } else {
            entries.append(entry)
            slot = entries.count - 1
        }
        index[entry.key] = slot
        link(slot)
    }

    private mutating func remove(_ slot: Int) {
        unlink(slot)
        index.removeValue(forKey: entries[slot].key)
        entries[slot].key = ""
        free.append(slot)
    }

    private mutating func touch(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        link(slot)
    }

    /// Makes `slot` the newest.
    private mutating func link(_ slot: Int) {
        entries[slot].older = newest
        entries[slot].newer = -1
        if newest >= 0 { entries[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }

    private mutating func unlink(_ slot: Int) {
        let newer = entries[slot].newer
        let older = entries[slot].older
        if newer >= 0 { entries[newer].older = older } else { newest = older }
        if older >= 0 { entries[older].newer = newer } else { oldest = newer }
        entries[slot].newer = -1
        entries[slot].older = -1
    }
}
