#!/usr/bin/env bash
# Builds the loopback server with ASan/UBSan and drives it with curl, nghttp, h2load and raw
# sockets. Not part of the package build. Usage: scripts/loopback-c-selftest/selftest.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$HERE/../../Sources/CHapiLoopback
WORK=$(mktemp -d /tmp/hapi-lb-selftest-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
FAILS=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }

gcc -std=c11 -g -O1 -Wall -Wextra -Werror -fsanitize=address,undefined -fno-omit-frame-pointer \
    -I"$SRC/include" -I"$SRC" "$SRC"/*.c "$HERE/selftest_server.c" -o "$WORK/server" \
    -lnghttp2 -lssl -lcrypto -lpthread || { echo "build failed"; exit 1; }

start() { # start MODE [silent] -> sets PID PORT CA OUT
    OUT=$WORK/$1$2.out
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$WORK/server" "$1" "$2" >"$OUT" 2>"$OUT.err" &
    PID=$!
    for _ in $(seq 50); do grep -q '^CA' "$OUT" 2>/dev/null && break; sleep 0.1; done
    PORT=$(awk '/^PORT/{print $2}' "$OUT")
    CA=$(awk '/^CA/{print $2}' "$OUT")
}
stop() { # stop -> checks clean exit and no sanitizer reports; prints the counters
    kill -TERM "$PID"
    wait "$PID"
    local rc=$?
    grep '^accepted' "$OUT"
    check "clean stop (rc=$rc)" test "$rc" = 0
    check "no sanitizer reports" bash -c "! grep -E 'Sanitizer|runtime error' '$OUT.err'"
    [ -s "$OUT.err" ] && head -30 "$OUT.err"
    if [ -n "$CA" ] && [ "$CA" != - ]; then check "CA file removed" test ! -e "$CA"; fi
}
stats() { $C $U/stats; } # "accepted handled open", counting this request's own connection

# ---------------- TLS ----------------
start tls ""
U=https://127.0.0.1:$PORT
C="curl -sS --max-time 10 --cacert $CA"
check "h2 echo" test "$($C -d abc $U/echo)" = abc
check "h2 negotiated" test "$($C -o /dev/null -w '%{http_version}' $U/x)" = 2
check "localhost SAN" test "$($C https://localhost:$PORT/x)" = /x
check "http/1.1 over TLS" test "$($C --http1.1 -o /dev/null -w '%{http_version}' $U/x)" = 1.1
check "http/1.1 echo" test "$($C --http1.1 -d hello $U/echo)" = hello
head -c 300000 /dev/urandom >"$WORK/up.bin"
check "h1 chunked upload" bash -c "$C --http1.1 -H 'Transfer-Encoding: chunked' --data-binary @$WORK/up.bin $U/echo | cmp - $WORK/up.bin"
check "h1 big upload (Expect: 100-continue)" bash -c "head -c 3000000 /dev/urandom > $WORK/up3.bin; $C --http1.1 --data-binary @$WORK/up3.bin $U/echo | cmp - $WORK/up3.bin"
check "h2 big upload" bash -c "$C --data-binary @$WORK/up3.bin $U/echo | cmp - $WORK/up3.bin"
check "h1 keep-alive (1 conn for 3 requests)" bash -c "$C --http1.1 $U/a $U/b $U/c -w '%{num_connects}\n' | tr -d '\n' | grep -q '/a1/b0/c0'"
check "untrusted client fails handshake" bash -c "! curl -sS --max-time 5 $U/x 2>/dev/null"
check "server alive after untrusted client" test "$($C $U/y)" = /y
check "h2 /big 8 MiB" test "$($C $U/big | wc -c)" = 8388608
check "h1 /big 8 MiB" test "$($C --http1.1 $U/big | wc -c)" = 8388608
check "h2 /big content" bash -c "$C $U/big 2>/dev/null | head -c 52 | grep -q '^abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz$'"
$C $U/reset -o /dev/null 2>"$WORK/e"; rc=$?
check "h2 /reset -> stream error (rc=$rc: $(head -c 80 "$WORK/e"))" test $rc -ne 0
$C $U/goaway -o /dev/null 2>"$WORK/e"; rc=$?
check "h2 /goaway -> refused (rc=$rc: $(head -c 80 "$WORK/e"))" test $rc -ne 0
nghttp -nv $U/first $U/goaway $U/third >"$WORK/ng-goaway" 2>&1
check "h2 GOAWAY mid-connection: last_stream_id=13, /first answered" \
    bash -c "grep -q 'last_stream_id=13, error_code=NO_ERROR' '$WORK/ng-goaway' && grep -q ':status: 200' '$WORK/ng-goaway'"
$C $U/drop -o /dev/null 2>"$WORK/e"; rc=$?
check "h2 /drop (rc=$rc: $(head -c 80 "$WORK/e"))" test $rc -ne 0
$C --http1.1 $U/drop -o /dev/null 2>"$WORK/e"; rc=$?
check "h1 /drop (rc=$rc: $(head -c 80 "$WORK/e"))" test $rc = 52
t=$($C -o /dev/null -w '%{time_total}' $U/slow)
check "h2 /slow delayed ($t s)" python3 -c "import sys; sys.exit(0 if $t >= 0.29 else 1)"
t=$($C --http1.1 -o /dev/null -w '%{time_total}' $U/slow)
check "h1 /slow delayed ($t s)" python3 -c "import sys; sys.exit(0 if $t >= 0.29 else 1)"
$C --max-time 1 $U/never -o /dev/null 2>/dev/null; rc=$?
check "h2 /never times out (rc=$rc)" test $rc = 28
n=$($C $U/partial 2>/dev/null | wc -c); $C $U/partial -o /dev/null 2>"$WORK/e"; rc=$?
check "h2 /partial: $n bytes then error (rc=$rc: $(head -c 80 "$WORK/e"))" test "$n" = 100 -a $rc -ne 0
n=$($C --http1.1 $U/partial 2>/dev/null | wc -c); $C --http1.1 $U/partial -o /dev/null 2>/dev/null; rc=$?
check "h1 /partial: $n bytes then rc=$rc (18 expected)" test "$n" = 100 -a $rc = 18
check "h2 /endless streams (5 MB read)" test "$($C $U/endless 2>/dev/null | head -c 5000000 | wc -c)" = 5000000
check "h1 /endless streams (5 MB read)" test "$($C --http1.1 $U/endless 2>/dev/null | head -c 5000000 | wc -c)" = 5000000
check "h2 status" test "$($C -o /dev/null -w '%{http_code}' $U/status/503)" = 503
check "HEAD h2" test "$($C -I $U/x | grep -c '^x-path')" = 1
check "HEAD h1" test "$($C --http1.1 -I $U/x | grep -ci '^x-path')" = 1

# Many concurrent requests, each response matched to its request. (curl's own default is at
# most 100 streams per connection; more parallel transfers make it open new connections.)
mkdir -p "$WORK/par"
$C -Z --parallel-max 100 "$U/id/[1-1000]" -o "$WORK/par/#1" -w '%{num_connects}\n' >"$WORK/par.conns" 2>"$WORK/par.err"
ok=1; for i in $(seq 1000); do [ "$(cat "$WORK/par/$i" 2>/dev/null)" = "/id/$i" ] || { ok=0; echo "mismatch $i"; break; }; done
conns=$(paste -sd+ "$WORK/par.conns" | bc)
check "curl -Z 1000 requests (100 at once) all matched, connections: $conns" test $ok = 1 -a "$conns" = 1
read a0 h0 o0 < <(stats)
h2load -n 1000 -c 1 -m 1000 $U/c >"$WORK/h2load1000" 2>&1
read a1 h1 o1 < <(stats)
check "h2load 1000 concurrent streams on 1 connection (accepted +$((a1 - a0 - 1)), handled +$((h1 - h0 - 1)))" \
    test "$(grep -c '1000 succeeded, 0 failed' "$WORK/h2load1000")" = 1 -a $((a1 - a0)) = 2 -a $((h1 - h0)) = 1001
nghttp -n -m 1000 $U/m >"$WORK/ng1000" 2>&1; rc=$?
check "nghttp -m 1000 on one connection (rc=$rc)" test $rc = 0
nghttp -v $U/v >"$WORK/ngv" 2>&1
check "nghttp -v: SETTINGS with MAX_CONCURRENT_STREAMS(0x03):1000" grep -q 'SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1000' "$WORK/ngv"

# Bad clients: each only loses its own connection.
exec 3<>/dev/tcp/127.0.0.1/$PORT; printf 'garbage garbage\r\n\r\n' >&3 2>/dev/null; exec 3>&-
openssl s_client -connect 127.0.0.1:$PORT -alpn h2 -quiet </dev/null >/dev/null 2>&1 &
sleep 0.3; kill $! 2>/dev/null
printf 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00' | timeout 2 openssl s_client -connect 127.0.0.1:$PORT -alpn h2 -quiet >/dev/null 2>&1
printf 'nonsense that is not http/2\r\n\r\n' | timeout 2 openssl s_client -connect 127.0.0.1:$PORT -alpn h2 -quiet >/dev/null 2>&1
printf 'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab' | timeout 2 openssl s_client -connect 127.0.0.1:$PORT -alpn http/1.1 -quiet >/dev/null 2>&1
check "alive after bad clients" test "$($C $U/alive)" = /alive

read a0 h0 o0 < <(stats)
h2load -n 10000 -c 1 -m 100 $U/h >"$WORK/h2load" 2>&1
read a1 h1 o1 < <(stats)
grep -E 'finished in|requests:' "$WORK/h2load"
check "h2load TLS 10000 requests, 1 connection (accepted +$((a1 - a0 - 1)))" \
    test "$(grep -c '10000 succeeded, 0 failed' "$WORK/h2load")" = 1 -a $((a1 - a0)) = 2
h2load -n 20000 -c 20 -m 50 $U/h >"$WORK/h2load20" 2>&1
grep -E 'finished in|requests:' "$WORK/h2load20"
check "h2load TLS 20 connections" grep -q '20000 succeeded, 0 failed' "$WORK/h2load20"
sleep 0.3
read a h o < <(stats)
check "open connections back to 1 (this one): $o" test "$o" = 1
# Stop while streams are busy: endless bodies, never-answered and delayed requests.
$C --max-time 30 $U/never -o /dev/null 2>/dev/null & P1=$!
$C --max-time 30 --limit-rate 200k $U/endless -o /dev/null 2>/dev/null & P2=$!
$C --max-time 30 --http1.1 --limit-rate 200k $U/endless -o /dev/null 2>/dev/null & P3=$!
nghttp -n -m 50 $U/slow $U/never >/dev/null 2>&1 & P4=$!
sleep 0.5
stop
wait $P1 $P2 $P3 $P4 2>/dev/null

# ---------------- cleartext ----------------
start clear ""
U=http://127.0.0.1:$PORT
C="curl -sS --max-time 10"
check "cleartext CA is NULL" test "$CA" = -
check "h2c prior knowledge echo" test "$($C --http2-prior-knowledge -d abc $U/echo)" = abc
check "h2c version" test "$($C --http2-prior-knowledge -o /dev/null -w '%{http_version}' $U/x)" = 2
check "plain http/1.1" test "$($C -o /dev/null -w '%{http_version}' $U/x)" = 1.1
check "plain http/1.1 chunked upload" bash -c "$C -H 'Transfer-Encoding: chunked' --data-binary @$WORK/up.bin $U/echo | cmp - $WORK/up.bin"
check "h2c /big" test "$($C --http2-prior-knowledge $U/big | wc -c)" = 8388608
exec 3<>/dev/tcp/127.0.0.1/$PORT; printf 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04' >&3 2>/dev/null; exec 3>&-
exec 3<>/dev/tcp/127.0.0.1/$PORT; head -c 4096 /dev/urandom >&3 2>/dev/null; exec 3>&-
check "alive after bad cleartext clients" test "$($C --http2-prior-knowledge $U/alive)" = /alive
h2load -n 10000 -c 1 -m 100 $U/h >"$WORK/h2load" 2>&1
grep -E 'finished in|requests:' "$WORK/h2load"
check "h2load h2c 10000 requests" grep -q '10000 succeeded, 0 failed' "$WORK/h2load"
sleep 0.3
stop

# ---------------- silent ----------------
start tls silent
$C --cacert "$CA" --max-time 1 https://127.0.0.1:$PORT/x -o /dev/null 2>/dev/null; rc=$?
check "silent server: handshake times out (rc=$rc)" test $rc = 28
stop

echo "failures: $FAILS"
exit $((FAILS > 0))
