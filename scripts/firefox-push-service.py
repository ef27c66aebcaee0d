#!/usr/bin/python3
"""A push service of our own for Firefox ESR on loopback, run by the Firefox test.

Speaks Firefox's push protocol (WebSocket, subprotocol push-notification: hello, register,
unregister, notification, ack) to a headless Firefox it starts with a fresh profile, serves the
test page and its service worker over plain HTTP (http://127.0.0.1 is a secure context), and
takes pushes over HTTPS the way Mozilla's push service (autopush) does, refusing what it refuses:
no TTL (400, errno 111), not aes128gcm (400, 110), a body over 4,096 bytes (413, 104), a VAPID
`k` other than the subscribing key, a JWT that does not verify with it, an `aud` other than the
endpoint's origin, an `exp` past 24 h or a `sub` not mailto:/https: (401, 109), a Topic over 32
base64url characters (400, 113). An unknown or unsubscribed channel is 410 (errno 106).

WebSocket framing is the `websockets` package's, TLS and HTTP the standard library's, the ES256
check the `cryptography` package's (Debian: python3-websockets, python3-cryptography).

Talks to the test through standard input and output, one JSON object a line. Out: `ready`
(ports), `hello`, `register`, `unregister`, `push` (accepted), `refused`, `ack`, `page` (what the
page reports: `subscribed`, `error`...), `received` (the bytes the service worker decrypted,
hex), `stopped`. In: `{"op":"subscribe","key":K}` (the page subscribes with applicationServerKey
K, first unsubscribing a subscription made with another key, as the hub's web client does), and
`{"op":"quit"}`. End of input, a signal or the deadline stops everything: Firefox's whole
process group is killed, and `stopped` says whether any of it was left.
"""
import argparse
import asyncio
import base64
import ctypes
import http.server
import json
import os
import queue
import re
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import uuid

import websockets
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

MAX_BODY = 4096
MAX_TTL = 60 * 24 * 3600
MAX_EXP = 24 * 3600
BASE64URL = re.compile(r"^[A-Za-z0-9_-]+$")

out_lock = threading.Lock()


def emit(event, **fields):
    fields["event"] = event
    with out_lock:
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()


def b64url_decode(text):
    text = text.strip().rstrip("=")
    if not BASE64URL.match(text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class PushService:
    """The channels Firefox registered, and the one WebSocket it keeps open."""

    def __init__(self, loop):
        self.loop = loop
        self.lock = threading.Lock()
        self.channels = {}  # channelID -> applicationServerKey (raw 65 bytes)
        self.socket = None
        self.https_origin = None

    # WebSocket side (runs on the event loop).
    async def handle(self, ws, path=None):
        try:
            async for text in ws:
                message = json.loads(text) if text.strip() not in ("", "{}") else {}
                kind = message.get("messageType")
                if not kind:  # a ping: "{}"
                    await ws.send("{}")
                elif kind == "hello":
                    self.socket = ws
                    uaid = message.get("uaid") or uuid.uuid4().hex
                    await ws.send(json.dumps({"messageType": "hello", "status": 200, "uaid": uaid, "use_webpush": True, "broadcasts": {}}))
                    emit("hello")
                elif kind == "register":
                    channel = message.get("channelID", "")
                    try:
                        key = b64url_decode(message.get("key", ""))
                    except ValueError:
                        key = b""
                    if len(key) != 65:
                        await ws.send(json.dumps({"messageType": "register", "channelID": channel, "status": 400}))
                        emit("register", channel=channel, status=400)
                        continue
                    with self.lock:
                        self.channels[channel] = key
                    endpoint = "%s/wpush/v2/%s" % (self.https_origin, channel)
                    await ws.send(json.dumps({"messageType": "register", "channelID": channel, "status": 200, "pushEndpoint": endpoint}))
                    emit("register", channel=channel, status=200, key=b64url_encode(key))
                elif kind == "unregister":
                    channel = message.get("channelID", "")
                    with self.lock:
                        self.channels.pop(channel, None)
                    await ws.send(json.dumps({"messageType": "unregister", "channelID": channel, "status": 200}))
                    emit("unregister", channel=channel)
                elif kind == "ack":
                    for update in message.get("updates", []):
                        emit("ack", channel=update.get("channelID"), version=update.get("version"), code=update.get("code"))
                elif kind == "nack":
                    emit("ack", version=message.get("version"), code=message.get("code"))
        except websockets.ConnectionClosed:
            pass
        finally:
            if self.socket is ws:
                self.socket = None

    async def deliver(self, channel, version, ttl, body):
        ws = self.socket
        if ws is None:
            return False
        await ws.send(json.dumps({
            "messageType": "notification", "channelID": channel, "version": version, "ttl": ttl,
            "data": b64url_encode(body), "headers": {"encoding": "aes128gcm"},
        }))
        return True

    # HTTPS side (runs on a server thread): None when accepted, else (status, errno, message).
    def check(self, path, headers, body):
        match = re.match(r"^/wpush/v2/([A-Za-z0-9-]+)$", path)
        with self.lock:
            key = self.channels.get(match.group(1)) if match else None
        if key is None:
            return (410, 106, "Subscription no longer valid")
        ttl = headers.get("TTL")
        if ttl is None or not ttl.strip().isdigit():
            return (400, 111, "Missing TTL header")
        if (headers.get("Content-Encoding") or "").strip().lower() != "aes128gcm":
            return (400, 110, "Unknown Content-Encoding")
        if len(body) > MAX_BODY:
            return (413, 104, "Body too large")
        topic = headers.get("Topic")
        if topic is not None and (len(topic) > 32 or not BASE64URL.match(topic)):
            return (400, 113, "Topic must be at most 32 base64url characters")
        why = self.check_vapid(headers.get("Authorization") or "", key)
        if why:
            return (401, 109, "Request did not validate: " + why)
        return None

    def check_vapid(self, authorization, key):
        scheme, _, rest = authorization.partition(" ")
        if scheme.lower() != "vapid":
            return "no vapid authorization"
        params = {}
        for part in rest.split(","):
            name, _, value = part.strip().partition("=")
            params[name.strip()] = value.strip()
        try:
            k = b64url_decode(params.get("k", ""))
        except ValueError:
            return "k is not base64url"
        if k != key:
            return "k is not the subscribing key"
        pieces = params.get("t", "").split(".")
        if len(pieces) != 3:
            return "t is not a JWT"
        try:
            header = json.loads(b64url_decode(pieces[0]))
            claims = json.loads(b64url_decode(pieces[1]))
            signature = b64url_decode(pieces[2])
        except (ValueError, UnicodeDecodeError):
            return "t does not decode"
        if header.get("alg") != "ES256" or len(signature) != 64:
            return "not ES256"
        try:
            public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), k)
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            public.verify(der, (pieces[0] + "." + pieces[1]).encode(), ec.ECDSA(hashes.SHA256()))
        except (InvalidSignature, ValueError):
            return "signature does not verify"
        if claims.get("aud") != self.https_origin:
            return "aud is not the endpoint's origin"
        exp = claims.get("exp")
        now = time.time()
        if not isinstance(exp, int) or exp <= now or exp > now + MAX_EXP:
            return "exp is not within 24 hours"
        sub = claims.get("sub")
        if not isinstance(sub, str) or not (sub.startswith("mailto:") or sub.startswith("https:")):
            return "sub is not mailto: or https:"
        return None


def make_push_handler(service):
    class PushHandler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length > 1 << 20:
                self.answer(413, 104, "Body too large", close=True)
                return
            body = self.rfile.read(length)
            refused = service.check(self.path, self.headers, body)
            if refused:
                status, errno, message = refused
                emit("refused", status=status, errno=errno, message=message)
                self.answer(status, errno, message)
                return
            channel = self.path.rsplit("/", 1)[-1]
            version = uuid.uuid4().hex
            ttl = min(int(self.headers["TTL"].strip()), MAX_TTL)
            future = asyncio.run_coroutine_threadsafe(service.deliver(channel, version, ttl, body), service.loop)
            online = future.result(timeout=5)
            emit("push", channel=channel, version=version, bytes=len(body), online=online,
                 topic=self.headers.get("Topic"), urgency=self.headers.get("Urgency"))
            self.send_response(201)
            self.send_header("Location", "%s/m/%s" % (service.https_origin, version))
            self.send_header("TTL", str(ttl))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def answer(self, status, errno, message, close=False):
            text = json.dumps({"code": status, "errno": errno, "error": http.HTTPStatus(status).phrase, "message": message}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(text)))
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(text)

    return PushHandler


PAGE = """<!doctype html><meta charset="utf-8"><title>hapi-push Firefox test</title>
<script>
const report = (event) => fetch("/event", {method: "POST", body: JSON.stringify(event)});
const sameKey = (buffer, key) => {
  if (!buffer) return false;
  const a = new Uint8Array(buffer), b = key;
  return a.length === b.length && a.every((v, i) => v === b[i]);
};
const decode = (text) => {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
};
// The browser starts answering push requests only in a late idle task: a request made before
// that never settles, so each step is given a few seconds and the whole subscription asked again.
const within = (promise, ms) => Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error("timeout")), ms))]);
// As the hub's web client does on load: a subscription made with another key is unsubscribed
// (and its endpoint reported, for the hub's DELETE /api/push/subscribe) and made again.
async function subscribeOnce(registration, key, stale) {
  const existing = await within(registration.pushManager.getSubscription(), 3000);
  if (existing && sameKey(existing.options.applicationServerKey, key)) return existing;
  if (existing) {
    stale.endpoint = existing.endpoint;
    await within(existing.unsubscribe(), 3000);
  }
  return await within(registration.pushManager.subscribe({userVisibleOnly: true, applicationServerKey: key}), 3000);
}
async function subscribe(registration, keyText) {
  const key = decode(keyText);
  const stale = {endpoint: null};
  for (let attempt = 1; ; attempt++) {
    try {
      const subscription = await subscribeOnce(registration, key, stale);
      return {subscription: subscription.toJSON(), staleEndpoint: stale.endpoint};
    } catch (error) {
      if (String(error).includes("timeout") && attempt < 15) {
        report({kind: "retry", attempt});
        continue;
      }
      throw error;
    }
  }
}
(async () => {
  try {
    const registration = await navigator.serviceWorker.register("/sw.js");
    await navigator.serviceWorker.ready;
    report({kind: "ready"});
    for (;;) {
      const command = await (await fetch("/command")).json();
      if (command.op === "subscribe") {
        try {
          report({kind: "subscribed", ...(await subscribe(registration, command.key))});
        } catch (error) {
          report({kind: "error", message: String(error)});
        }
      }
    }
  } catch (error) {
    report({kind: "error", message: String(error)});
  }
})();
</script>
"""

SERVICE_WORKER = """
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
self.addEventListener("push", (event) => {
  const bytes = event.data ? event.data.arrayBuffer() : new ArrayBuffer(0);
  event.waitUntil(Promise.all([
    fetch("/received", {method: "POST", body: bytes}),
    self.registration.showNotification("hapi-push test", {body: "push " + bytes.byteLength}),
  ]));
});
"""


def make_page_handler(commands):
    class PageHandler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path == "/":
                self.reply(200, "text/html; charset=utf-8", PAGE.encode())
            elif self.path == "/sw.js":
                self.reply(200, "text/javascript", SERVICE_WORKER.encode())
            elif self.path == "/command":
                try:
                    command = commands.get(timeout=20)
                except queue.Empty:
                    command = {"op": "wait"}
                emit("command", op=command.get("op"))
                self.reply(200, "application/json", json.dumps(command).encode())
            else:
                self.reply(404, "text/plain", b"not found")

        def do_POST(self):
            length = min(int(self.headers.get("Content-Length") or 0), 1 << 20)
            body = self.rfile.read(length)
            if self.path == "/received":
                emit("received", hex=body.hex())
            elif self.path == "/event":
                try:
                    emit("page", **json.loads(body))
                except ValueError:
                    emit("page", kind="unparseable")
            self.reply(204, "text/plain", b"")

        def reply(self, status, kind, body):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if body:
                self.wfile.write(body)

    return PageHandler


def user_js(ws_port, closed_port):
    prefs = {
        "dom.push.serverURL": "ws://127.0.0.1:%d/" % ws_port,
        "dom.push.testing.allowInsecureServerURL": True,
        "dom.push.enabled": True,
        "dom.push.connection.enabled": True,
        "dom.serviceWorkers.enabled": True,
        "permissions.default.desktop-notification": 1,
        "alerts.useSystemBackend": False,
        # Everything but 127.0.0.1 goes to a closed loopback port.
        "network.proxy.type": 1,
        "network.proxy.http": "127.0.0.1", "network.proxy.http_port": closed_port,
        "network.proxy.ssl": "127.0.0.1", "network.proxy.ssl_port": closed_port,
        "network.proxy.socks": "127.0.0.1", "network.proxy.socks_port": closed_port,
        "network.proxy.socks_remote_dns": True,
        "network.proxy.no_proxies_on": "127.0.0.1",
        "network.proxy.allow_hijacking_localhost": False,
        "network.trr.mode": 5,
        "network.dns.disablePrefetch": True,
        "network.prefetch-next": False,
        "network.predictor.enabled": False,
        "network.http.speculative-parallel-limit": 0,
        "network.captive-portal-service.enabled": False,
        "network.connectivity-service.enabled": False,
        "captivedetect.canonicalURL": "",
        "services.settings.server": "http://127.0.0.1:%d/" % closed_port,
        "toolkit.telemetry.enabled": False,
        "toolkit.telemetry.unified": False,
        "toolkit.telemetry.server": "",
        "datareporting.healthreport.uploadEnabled": False,
        "datareporting.policy.dataSubmissionEnabled": False,
        "app.update.disabledForTesting": True,
        "app.update.auto": False,
        "app.normandy.enabled": False,
        "browser.safebrowsing.malware.enabled": False,
        "browser.safebrowsing.phishing.enabled": False,
        "browser.safebrowsing.downloads.enabled": False,
        "browser.safebrowsing.blockedURIs.enabled": False,
        "browser.safebrowsing.update.enabled": False,
        "extensions.update.enabled": False,
        "extensions.getAddons.cache.enabled": False,
        "extensions.systemAddon.update.enabled": False,
        "browser.shell.checkDefaultBrowser": False,
        "browser.startup.homepage_override.mstone": "ignore",
        "browser.aboutwelcome.enabled": False,
        "browser.newtabpage.enabled": False,
        "browser.newtabpage.activity-stream.feeds.topsites": False,
        "browser.region.network.url": "",
        "browser.search.update": False,
        "geo.provider.network.url": "",
        "datareporting.policy.firstRunURL": "",
        "browser.ping-centre.telemetry": False,
        "media.gmp-manager.url": "",
        "media.gmp-gmpopenh264.enabled": False,
        "devtools.console.stdout.content": True,
        "browser.dom.window.dump.enabled": True,
    }
    lines = []
    for name, value in prefs.items():
        lines.append("user_pref(%s, %s);" % (json.dumps(name), json.dumps(value)))
    return "\n".join(lines) + "\n"


def serve(server):
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return thread


def closed_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def set_parent_death_signal():
    # Firefox dies with this process, even when it is killed outright.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def stop_firefox(firefox):
    if firefox is None:
        return False
    pgid = firefox.pid
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
        if not group_alive(pgid):
            break
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.time() + wait
        while time.time() < deadline:
            try:
                firefox.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
            if not group_alive(pgid):
                break
    try:
        firefox.wait(timeout=1)
    except subprocess.TimeoutExpired:
        pass
    return group_alive(pgid)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True, help="a fresh directory: the profile, and server.pem/server.key for HTTPS")
    parser.add_argument("--firefox", default="/usr/bin/firefox-esr")
    parser.add_argument("--deadline", type=float, default=120.0, help="seconds before everything is stopped")
    args = parser.parse_args()

    loop = asyncio.get_running_loop()
    service = PushService(loop)
    commands = queue.Queue()

    ws_server = await websockets.serve(service.handle, "127.0.0.1", 0, subprotocols=["push-notification"], ping_interval=None)
    ws_port = ws_server.sockets[0].getsockname()[1]

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(args.dir, "server.pem"), os.path.join(args.dir, "server.key"))
    push_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_push_handler(service))
    push_server.daemon_threads = True
    push_server.socket = context.wrap_socket(push_server.socket, server_side=True)
    push_port = push_server.server_address[1]
    service.https_origin = "https://127.0.0.1:%d" % push_port
    page_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_page_handler(commands))
    page_server.daemon_threads = True
    page_port = page_server.server_address[1]
    for server in (push_server, page_server):
        server.handle_error = lambda request, address: None  # a browser closing a connection early
        serve(server)

    profile = os.path.join(args.dir, "profile")
    os.makedirs(profile, exist_ok=True)
    with open(os.path.join(profile, "user.js"), "w") as f:
        f.write(user_js(ws_port, closed_port()))
    home = os.path.join(args.dir, "home")
    os.makedirs(home, exist_ok=True)
    environment = {
        "PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": args.dir, "MOZ_HEADLESS": "1",
        "MOZ_CRASHREPORTER_DISABLE": "1", "MOZ_DISABLE_AUTO_SAFE_MODE": "1", "LANG": "C.UTF-8",
        "XDG_CACHE_HOME": os.path.join(home, ".cache"), "XDG_CONFIG_HOME": os.path.join(home, ".config"),
    }
    emit("ready", push=service.https_origin, page="http://127.0.0.1:%d/" % page_port, websocket=ws_port)

    firefox = None
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stopping.set)

    def read_commands():
        for line in sys.stdin:
            try:
                command = json.loads(line)
            except ValueError:
                continue
            if command.get("op") == "quit":
                break
            commands.put(command)
        loop.call_soon_threadsafe(stopping.set)

    threading.Thread(target=read_commands, daemon=True).start()
    log = open(os.path.join(args.dir, "firefox.log"), "wb")
    try:
        firefox = subprocess.Popen(
            [args.firefox, "--headless", "--no-remote", "--new-instance", "--profile", profile, "http://127.0.0.1:%d/" % page_port],
            env=environment, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, preexec_fn=set_parent_death_signal)
        emit("firefox", pid=firefox.pid)
        try:
            await asyncio.wait_for(stopping.wait(), timeout=args.deadline)
            reason = "asked"
        except asyncio.TimeoutError:
            reason = "deadline"
    finally:
        left = stop_firefox(firefox)
        ws_server.close()
        push_server.shutdown()
        page_server.shutdown()
        emit("stopped", reason=locals().get("reason", "error"), firefoxLeft=left)


if __name__ == "__main__":
    asyncio.run(main())
