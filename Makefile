# hapi-push-native: every target first installs the Debian -dev packages it needs.
# Tests run serially: several count this process's file descriptors and connections.
SHELL := /bin/bash
SWIFT ?= swift
# Strict flags live here, not in Package.swift, so the package stays usable as a dependency.
STRICT := -Xswiftc -warnings-as-errors
BUILD_PACKAGES := libssl-dev libcurl4-openssl-dev libnghttp2-dev libsqlite3-dev libpq-dev libmicrohttpd-dev libhiredis-dev pkg-config
# Real servers the tests start: PostgreSQL (initdb/pg_ctl from the Debian package), Redis
# (redis-server, with redis-cli from redis-tools for the tests' own checks), and Debian's stock
# nghttpd (with openssl to make its certificates); Debian's caddy in front of the relay (with curl
# as the client, from chosen 127.x addresses); systemd-analyze for the relay's unit; tinyproxy,
# the egress proxy the proxy tests go through, and socat, the TLS front that makes it an https:// proxy;
# Firefox ESR, the browser of the Web Push test, with python3-websockets and python3-cryptography for
# the push service it is pointed at (scripts/firefox-push-service.py).
TEST_PACKAGES := $(BUILD_PACKAGES) postgresql redis-server redis-tools nghttp2-server openssl caddy curl systemd tinyproxy socat firefox-esr python3 python3-websockets python3-cryptography
BENCH_PACKAGES := $(TEST_PACKAGES) nghttp2-client time wrk

.PHONY: deps build test test-portable test-sanitize demo bench soak fuzz deploy-check clean

deps:
	@scripts/ensure-deps.sh $(BUILD_PACKAGES)

build: deps
	$(SWIFT) build $(STRICT)

# First: the sources name the operating system only behind guards and in the Linux backend
# (scripts/check-platform-sources.sh), and a hub depending on PushNative with the PostgreSQL
# trait off plans no libpq (seconds each).
test:
	@scripts/check-platform-sources.sh
	@scripts/ensure-deps.sh $(TEST_PACKAGES)
	@SWIFT="$(SWIFT)" scripts/check-embedding-without-postgres.sh
	$(SWIFT) build --build-tests $(STRICT)
	@python3 scripts/public-api.py --check "$$($(SWIFT) build --show-bin-path)"
	$(SWIFT) test --skip-build --no-parallel

# The portable path on Linux: -DHAPI_PUSH_PORTABLE makes the build take the branches other
# systems take where Linux has the same call (PushPlatform's poll(2) selector and pipe wake-up
# instead of epoll and an eventfd, fcntl for socket flags), in its own build directory; then the
# platform layer's suite and those that do I/O (HTTP client and engine, proxies, transports,
# relay, registry, dispatch). CI runs it after `make test` (.ci/run).
PORTABLE := -Xswiftc -DHAPI_PUSH_PORTABLE --scratch-path .build/portable
PORTABLE_SUITES := PushPlatformTests|PushHTTPTests|PushSyncTests|PushTransportsTests|PushRelayTests|DeviceRegistryTests|PushNativeTests\.[A-Za-z]*Dispatch[A-Za-z]*Tests
test-portable:
	@scripts/check-platform-sources.sh
	@scripts/ensure-deps.sh $(TEST_PACKAGES)
	$(SWIFT) build --build-tests $(STRICT) $(PORTABLE)
	$(SWIFT) test --skip-build --no-parallel $(PORTABLE) --filter '$(PORTABLE_SUITES)'

# The suite under ThreadSanitizer, then AddressSanitizer with LeakSanitizer; each in its own
# build directory. Any report fails the target. scripts/lsan.supp names the only leaks allowed:
# the toolchain's own (Foundation, XCTest), never this library's.
test-sanitize:
	@scripts/ensure-deps.sh $(TEST_PACKAGES)
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build/tsan
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$(CURDIR)/scripts/tsan.supp" $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build/tsan --no-parallel
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build/asan
	ASAN_OPTIONS="detect_leaks=1" LSAN_OPTIONS="suppressions=$(CURDIR)/scripts/lsan.supp" $(SWIFT) test --skip-build --sanitize=address --scratch-path .build/asan --no-parallel

demo: deps
	@$(SWIFT) build -q --product hapi-push-demo
	@"$$($(SWIFT) build --show-bin-path)/hapi-push-demo"

# SECTIONS picks hapi-push-bench's sections; `official-relay` is scripts/official-relay/bench.py, our
# relay next to the official one (HAPI_GIT, JOSE_GIT and BUN name its source and runtime; without
# them ours runs alone and the output says so).
BENCH_SWIFT_SECTIONS := $(filter-out official-relay,$(SECTIONS))
bench:
	@scripts/ensure-deps.sh $(BENCH_PACKAGES)
	$(SWIFT) build -q -c release --product hapi-push-bench
	$(SWIFT) build -q -c release --product hapi-push
	$(SWIFT) build -q -c release --product hapi-push-relay
	@if [ -z "$(SECTIONS)" ] || [ -n "$(BENCH_SWIFT_SECTIONS)" ]; then "$$($(SWIFT) build -c release --show-bin-path)/hapi-push-bench" $(BENCH_SWIFT_SECTIONS); fi
	@if [ -z "$(SECTIONS)" ] || [ -n "$(filter official-relay,$(SECTIONS))" ]; then python3 scripts/official-relay/bench.py "$$($(SWIFT) build -c release --show-bin-path)/hapi-push-relay"; fi

# 500,000 device-sends (5,000 rounds x 100 devices) against the loopback stand-ins with injected
# faults; fails on unbounded memory or descriptor growth or a lost registration.
soak: deps
	$(SWIFT) build -q -c release --product hapi-push-soak
	"$$($(SWIFT) build -c release --show-bin-path)/hapi-push-soak"

# libFuzzer targets (-sanitize=fuzzer,address), not part of `test`: FUZZ_SECONDS per target
# (default 150), seeds in Tests/Fuzz/corpus; see Tests/Fuzz/README.md.
fuzz: deps
	SWIFT="$(SWIFT)" scripts/fuzz.sh

# deploy/Dockerfile's two stages built and run in two debootstrap roots (no container engine
# needed; root, minutes: a release build): fails when a library is missing. See docs/relay.md.
deploy-check:
	@scripts/ensure-deps.sh debootstrap openssl
	scripts/deploy-check.sh

clean:
	rm -rf .build
