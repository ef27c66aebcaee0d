# hapi-push-native: every target first installs the Debian -dev packages it needs.
# Tests run serially: several count this process's file descriptors and connections.
SHELL := /bin/bash
SWIFT ?= swift
# Strict flags live here, not in Package.swift, so the package stays usable as a dependency.
STRICT := -Xswiftc -warnings-as-errors
BUILD_PACKAGES := libssl-dev libcurl4-openssl-dev libnghttp2-dev libsqlite3-dev pkg-config
BENCH_PACKAGES := $(BUILD_PACKAGES) nghttp2-client

.PHONY: deps build test demo bench clean

deps:
	@scripts/ensure-deps.sh $(BUILD_PACKAGES)

build: deps
	$(SWIFT) build $(STRICT)

test: deps
	$(SWIFT) build --build-tests $(STRICT)
	$(SWIFT) test --skip-build --no-parallel

demo: deps
	@$(SWIFT) build -q --product hapi-push
	@"$$($(SWIFT) build --show-bin-path)/hapi-push" demo

bench:
	@scripts/ensure-deps.sh $(BENCH_PACKAGES)
	$(SWIFT) build -q -c release --product hapi-push-bench
	@"$$($(SWIFT) build -c release --show-bin-path)/hapi-push-bench"

clean:
	rm -rf .build
