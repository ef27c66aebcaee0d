/// The one Lua script a push costs in Redis: the client IP's token bucket, then (only if the IP
/// admits it) the device's, both read, refilled, taken from and written back atomically (Redis
/// runs a script alone), so relay instances sharing a Redis share one budget.
///
/// Same semantics and numbers as `TokenBucketTable`: a new bucket starts full and the push takes
/// one token; a bucket refills continuously at `perMinute` up to `burst`. Time is Redis's own
/// clock (`TIME`), so instances whose clocks disagree still agree on every bucket. Each key
/// expires (`PEXPIRE`) when its bucket would be full again: forgetting a full bucket changes
/// nothing, and Redis holds only the buckets of the last few minutes' clients and devices.
enum RedisBucketScript {
    static let source = """
        -- hapi-push-relay rate limits, v1. KEYS[1]: the client's bucket, KEYS[2]: the device's.
        -- ARGV: client burst, client per minute, device burst, device per minute.
        -- Returns 0 (admitted), 1 (the client's budget is spent; the device's is untouched)
        -- or 2 (the device's budget is spent).
        local clock = redis.call('TIME')
        local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
        local function take(key, burst, per_minute)
          local state = redis.call('HMGET', key, 'tokens', 'at')
          local tokens = tonumber(state[1]) or burst
          local at = tonumber(state[2]) or now
          if now > at then
            tokens = math.min(burst, tokens + (now - at) * per_minute / 60000000)
            at = now
          end
          local allowed = tokens >= 1
          if allowed then tokens = tokens - 1 end
          redis.call('HSET', key, 'tokens', tokens, 'at', at)
          redis.call('PEXPIRE', key, math.max(1, math.ceil((burst - tokens) * 60000 / per_minute)))
          return allowed
        end
        if not take(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])) then return 1 end
        if not take(KEYS[2], tonumber(ARGV[3]), tonumber(ARGV[4])) then return 2 end
        return 0
        """

    static var loadCommand: [[UInt8]] { [Array("SCRIPT".utf8), Array("LOAD".utf8), Array(source.utf8)] }

    /// `EVALSHA sha 2 clientKey deviceKey …limits`.
    static func evaluate(sha: [UInt8], clientKey: [UInt8], deviceKey: [UInt8], client: PushRelayRateLimit, device: PushRelayRateLimit)
        -> [[UInt8]]
    {
        [
            Array("EVALSHA".utf8), sha, Array("2".utf8), clientKey, deviceKey, Array(String(client.burst).utf8), Array(String(client.perMinute).utf8),
            Array(String(device.burst).utf8), Array(String(device.perMinute).utf8),
        ]
    }

    /// The script's answer, or nil for anything else.
    static func admission(_ reply: RedisReply) -> PushRelayAdmission? {
        switch reply {
        case .integer(0): .admitted
        case .integer(1): .clientLimited
        case .integer(2): .deviceLimited
        default: nil
        }
    }

    /// SCRIPT LOAD's answer: the script's SHA-1 in 40 hex digits.
    static func sha(_ reply: RedisReply) -> [UInt8]? {
        guard case .bulk(let bytes) = reply, bytes.count == 40,
            bytes.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || (0x41...0x46).contains($0) })
        else { return nil }
        return bytes
    }
}
