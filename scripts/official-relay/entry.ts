// Loopback adapter for `make bench SECTIONS=official-relay`: runs the official relay's own app
// (createRelayApp, its limiters, its APNs client and JWT provider, imported unchanged from the
// checkout the bench extracts) with the two things a loopback run needs and its index.ts cannot
// be told: the APNs base URL of our stand-in, and a bind to 127.0.0.1 only. BENCH_LIMITS=raised
// lifts its token buckets, as the throughput figure measures CPU, not its rate limit.
import { ApnsJwtProvider, Http2ApnsClient } from './relay/src/apns'
import { IP_RATE_LIMIT, TOKEN_RATE_LIMIT, loadConfigFromEnv, readRelayVersion } from './relay/src/config'
import { MAX_REQUEST_BODY_BYTES, createRelayApp, resolveClientIp } from './relay/src/index'
import { TokenBucketLimiter } from './relay/src/rateLimit'

const config = loadConfigFromEnv()
const baseUrl = process.env.BENCH_APNS_BASE_URL ?? ''
if (baseUrl === '') throw new Error('BENCH_APNS_BASE_URL is required')
const open = { capacity: 1e9, refillPerMinute: 1e9 }
const raised = process.env.BENCH_LIMITS === 'raised'
const jwtProvider = new ApnsJwtProvider({
    privateKeyPem: await Bun.file(config.apnsKeyP8Path).text(),
    keyId: config.apnsKeyId,
    teamId: config.apnsTeamId
})
const app = createRelayApp({
    apns: new Http2ApnsClient({ baseUrl, topic: config.apnsBundleId, jwtProvider }),
    version: await readRelayVersion(),
    tokenLimiter: new TokenBucketLimiter(raised ? open : TOKEN_RATE_LIMIT),
    ipLimiter: new TokenBucketLimiter(raised ? open : IP_RATE_LIMIT)
})
const server = Bun.serve({
    port: config.port,
    hostname: '127.0.0.1',
    maxRequestBodySize: MAX_REQUEST_BODY_BYTES,
    fetch: (req, srv) => app.handle(req, resolveClientIp(req, srv, config.trustProxy))
})
console.log(`official relay listening on http://127.0.0.1:${server.port} (bun ${Bun.version})`)
