// swift-tools-version:6.1
import PackageDescription

/// Upcoming features that keep the public surface honest: C modules are imported
/// `internal`ly by default, so no C type can leak into the public API.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "hapi-push-native",
    // Built and tested on Linux only. macOS 13 is the first with `ContinuousClock` and `Duration`,
    // which the library uses; the README's "Building on macOS" says what is (and is not) checked.
    platforms: [.macOS(.v13)],
    products: [
        .library(name: "PushNative", targets: ["PushNative"]),
        .library(name: "PushCore", targets: ["PushCore"]),
        .library(name: "PushEnvelope", targets: ["PushEnvelope"]),
        .library(name: "DeviceRegistry", targets: ["DeviceRegistry"]),
        .library(name: "DeviceRegistryPostgres", targets: ["DeviceRegistryPostgres"]),
        .library(name: "PushProviders", targets: ["PushProviders"]),
        .library(name: "PushTelemetry", targets: ["PushTelemetry"]),
        .library(name: "PushTransports", targets: ["PushTransports"]),
        .library(name: "PushRelay", targets: ["PushRelay"]),
        .executable(name: "hapi-push", targets: ["hapi-push"]),
        .executable(name: "hapi-push-relay", targets: ["hapi-push-relay"]),
        .executable(name: "hapi-push-demo", targets: ["hapi-push-demo"]),
    ],
    // PostgreSQL (libpq) for the registry. On by default (this package's products and tests use
    // it); a hub on the SQLite default depends on us with `traits: []` and builds without libpq.
    traits: [
        .trait(name: "PostgreSQL", description: "The device registry on PostgreSQL (libpq): PostgresPushDeviceStore and HAPI_PUSH_DATABASE_URL"),
        .default(enabledTraits: ["PostgreSQL"]),
    ],
    targets: [
        // C libraries, each behind a prefixed system-library module. Providers: the Debian package
        // and the Homebrew formula (whose .pc files carry the pkgConfig names here).
        .systemLibrary(
            name: "CHapiOpenSSL", path: "Sources/CHapiOpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(
            name: "CHapiCurl", path: "Sources/CHapiCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),
        .systemLibrary(
            name: "CHapiNghttp2", path: "Sources/CHapiNghttp2", pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"]), .brew(["nghttp2"])]),
        // Key generation for tests and the demo only, kept out of the production shim above.
        .systemLibrary(
            name: "CHapiTestOpenSSL", path: "Sources/CHapiTestOpenSSL",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        // The platform layer's C side (the C library's own: no provider): CHapiPlatform for every
        // system; CHapiEpoll (epoll, eventfd) for PushPlatform's Linux backend alone; and
        // CHapiMallocArena (glibc's mallopt) for the `hapi-push` executable, never a library.
        .systemLibrary(name: "CHapiPlatform", path: "Sources/CHapiPlatform"),
        .systemLibrary(name: "CHapiEpoll", path: "Sources/CHapiEpoll"),
        .systemLibrary(name: "CHapiMallocArena", path: "Sources/CHapiMallocArena"),
        .systemLibrary(
            name: "CHapiSQLite", path: "Sources/CHapiSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .systemLibrary(
            name: "CHapiPostgres", path: "Sources/CHapiPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        .systemLibrary(
            name: "CHapiMicrohttpd", path: "Sources/CHapiMicrohttpd", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]),
        // hiredis 0.14 (no TLS of its own): typed wrappers for its variadic and void * calls.
        // No pkgConfig: hiredis.pc only adds -D_FILE_OFFSET_BITS=64, which SwiftPM refuses
        // with a warning on every build; the header is <hiredis/hiredis.h> in /usr/include.
        .systemLibrary(
            name: "CHapiRedis", path: "Sources/CHapiRedis",
            providers: [.apt(["libhiredis-dev"]), .brew(["hiredis"])]),

        // The only code that names the operating system: the selector (epoll on Linux, poll(2)
        // elsewhere and under HAPI_PUSH_PORTABLE) and its wake-up, thread naming, socket flags,
        // per-connection byte counts, descriptor limits. Machinery (`package`), never public.
        .target(
            name: "PushPlatform",
            dependencies: ["CHapiPlatform", .target(name: "CHapiEpoll", condition: .when(platforms: [.linux]))],
            swiftSettings: strictSettings),
        // One lock type that ThreadSanitizer can see (pthread), and the package's threads, for every module.
        .target(name: "PushSync", dependencies: ["PushPlatform"], swiftSettings: strictSettings),
        // The core under everything: the JSON parser and value, canonical JSON, base64, safe text.
        // No C, no network.
        .target(name: "PushCore", swiftSettings: strictSettings),
        // Payloads, keys, our AES-256-GCM envelope and Web Push's aes128gcm (WebPush/). No network.
        .target(name: "PushEnvelope", dependencies: ["PushCore", "CHapiOpenSSL", "PushSync"], swiftSettings: strictSettings),
        // Registrations and their stores. No network.
        .target(
            name: "DeviceRegistry", dependencies: ["PushEnvelope", "PushProviders", "PushSync", "CHapiSQLite", "CHapiOpenSSL"],
            swiftSettings: strictSettings),
        // The registry on PostgreSQL (libpq), for hubs of several processes or hosts.
        .target(
            name: "DeviceRegistryPostgres", dependencies: ["DeviceRegistry", "PushEnvelope", "PushSync", "CHapiPostgres", "CHapiOpenSSL"],
            swiftSettings: strictSettings),
        // The HTTP client every transport sends through: an HTTP/2 engine on nghttp2 + OpenSSL for
        // https origins that speak h2, libcurl for the rest. Nothing of it is public.
        .target(
            name: "PushHTTP", dependencies: ["PushSync", "PushPlatform", "CHapiCurl", "CHapiNghttp2", "CHapiOpenSSL"],
            swiftSettings: strictSettings),
        // What each provider wants on the wire and what its answers mean, with no I/O: one request
        // builder and one answer parser per provider, the provider tokens. Shared by the hub's
        // transports and the relay.
        .target(name: "PushProviders", dependencies: ["PushEnvelope", "CHapiOpenSSL"], swiftSettings: strictSettings),
        // Where each push is reported: the logger hook, the metrics sink and the Prometheus text,
        // for the hub and the relay alike (the relay imports it without the hub's transports).
        .target(name: "PushTelemetry", dependencies: ["PushProviders", "PushSync"], swiftSettings: strictSettings),
        // The hub's ways out (relay, APNs, FCM) and their policy: backoff, retries, pruning.
        .target(
            name: "PushTransports", dependencies: ["PushProviders", "PushTelemetry", "PushEnvelope", "PushSync", "PushHTTP", "CHapiOpenSSL"],
            swiftSettings: strictSettings),
        // A real HTTP/2 + TLS server on loopback (nghttp2 + OpenSSL), for tests and the demo.
        .target(
            name: "CHapiLoopback",
            linkerSettings: [.linkedLibrary("nghttp2"), .linkedLibrary("ssl"), .linkedLibrary("crypto"), .linkedLibrary("pthread")]),
        // `make bench`'s floor for a Web Push seal: RFC 8291's unavoidable steps in C on OpenSSL 3.
        .target(name: "CHapiWebPushFloor", linkerSettings: [.linkedLibrary("crypto")]),
        .target(name: "PushLoopbackServer", dependencies: ["CHapiLoopback", "PushSync"], swiftSettings: strictSettings),
        // Throwaway keys and JWT verification for tests and the demo (not a product).
        .target(
            name: "PushTestSupport", dependencies: ["PushEnvelope", "PushSync", "PushPlatform", "PushLoopbackServer", "CHapiOpenSSL", "CHapiTestOpenSSL"],
            swiftSettings: strictSettings),
        // What a hub imports: configuration, the dispatcher, the public face.
        .target(
            name: "PushNative",
            dependencies: [
                "PushEnvelope", "PushSync", "DeviceRegistry", "PushHTTP", "PushProviders", "PushTelemetry", "PushTransports",
                .target(name: "DeviceRegistryPostgres", condition: .when(traits: ["PostgreSQL"])),
            ],
            swiftSettings: strictSettings),
        // The push relay service (beside PushNative, never depending on it) and its executable.
        .target(
            name: "PushRelay", dependencies: ["PushProviders", "PushTelemetry", "PushTransports", "PushHTTP", "PushEnvelope", "PushSync", "PushPlatform", "CHapiMicrohttpd", "CHapiRedis", "CHapiOpenSSL"],
            swiftSettings: strictSettings),
        .executableTarget(name: "hapi-push-relay", dependencies: ["PushRelay", "PushSync"], swiftSettings: strictSettings),
        .executableTarget(
            name: "hapi-push",
            dependencies: ["PushNative", "PushEnvelope", .target(name: "CHapiMallocArena", condition: .when(platforms: [.linux]))],
            swiftSettings: strictSettings),
        // `make demo`: the whole flow against loopback stand-ins with throwaway keys, apart from
        // the operator's CLI so `hapi-push` links no test code.
        .executableTarget(
            name: "hapi-push-demo", dependencies: ["PushNative", "PushEnvelope", "PushLoopbackServer", "PushTestSupport"],
            swiftSettings: strictSettings),

        // `make bench`: figures printed as ratios against a reference measured in the same run.
        .executableTarget(
            name: "hapi-push-bench",
            dependencies: [
                "PushNative", "PushEnvelope", "PushHTTP", "PushRelay", "PushSync", "PushLoopbackServer", "PushTestSupport", "CHapiOpenSSL", "CHapiSQLite",
                "CHapiPostgres", "PushPlatform", "CHapiWebPushFloor",
            ],
            swiftSettings: strictSettings),

        // `make soak`: 500,000 device-sends with injected faults; fails on unbounded growth or a lost registration.
        .executableTarget(
            name: "hapi-push-soak", dependencies: ["PushNative", "PushEnvelope", "PushSync", "PushTestSupport", "PushLoopbackServer"],
            swiftSettings: strictSettings),

        // Child processes for tests that need a second writer or a kill -9 (not a product).
        .executableTarget(
            name: "hapi-push-testsupport", dependencies: ["PushNative", "PushEnvelope", "CHapiSQLite"],
            swiftSettings: strictSettings),

        .testTarget(
            name: "PushEnvelopeTests", dependencies: ["PushCore", "PushEnvelope"],
            swiftSettings: strictSettings),
        .testTarget(name: "PushSyncTests", dependencies: ["PushSync", "PushPlatform"], swiftSettings: strictSettings),
        .testTarget(name: "PushPlatformTests", dependencies: ["PushPlatform", "PushSync"], swiftSettings: strictSettings),
        .testTarget(
            name: "DeviceRegistryTests",
            dependencies: ["DeviceRegistry", "DeviceRegistryPostgres", "PushEnvelope", "PushTestSupport", "CHapiPostgres", "hapi-push-testsupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "PushHTTPTests",
            dependencies: ["PushHTTP", "PushLoopbackServer", "PushTestSupport", "PushSync", "PushPlatform"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "PushProvidersTests", dependencies: ["PushProviders", "PushEnvelope", "PushTestSupport", "CHapiOpenSSL"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "PushTransportsTests",
            dependencies: ["PushTransports", "PushProviders", "PushHTTP", "PushLoopbackServer", "PushEnvelope", "PushTestSupport", "PushSync", "PushPlatform"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "PushNativeTests",
            dependencies: [
                "PushNative", "PushEnvelope", "DeviceRegistry", "PushTransports", "PushHTTP", "PushSync", "PushTestSupport", "PushLoopbackServer",
                "hapi-push-testsupport", "hapi-push",
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "PushRelayTests",
            dependencies: [
                "PushRelay", "hapi-push-relay", "PushNative", "DeviceRegistry", "PushTransports", "PushHTTP", "PushEnvelope", "PushSync", "PushPlatform", "PushTestSupport",
                "PushLoopbackServer",
            ],
            swiftSettings: strictSettings),
        // The embedder's view: a module of the ecosystem's generic names (AsyncHTTPClient's
        // `HTTPClient`, NIOHTTP1's `HTTPHeaders`, swift-crypto's `Digest`, …) and a test that
        // imports it next to `PushNative` and uses every one unqualified; plus the README's
        // embedding code with its swift-log and swift-metrics bridges.
        .target(name: "PushEcosystemStandIns", path: "Tests/PushEcosystemStandIns", swiftSettings: strictSettings),
        .testTarget(
            name: "PushEmbeddingTests",
            dependencies: [
                "PushNative", "PushEcosystemStandIns", "PushTestSupport", "PushCore", "PushEnvelope", "DeviceRegistry", "DeviceRegistryPostgres", "PushTelemetry",
                "PushTransports",
            ],
            swiftSettings: strictSettings),
        .testTarget(
            name: "HapiPushCLITests", dependencies: ["hapi-push", "hapi-push-demo", "PushTestSupport", "PushEnvelope", "DeviceRegistry", "PushLoopbackServer"],
            swiftSettings: strictSettings),
    ]
)

// `make fuzz` only (scripts/fuzz.sh sets HAPI_PUSH_FUZZ=1): the libFuzzer harnesses, built with
// `-sanitize=fuzzer,address`, which supplies `main`. They are targets of this package so they
// reach its `package` machinery (the JSON parser, the classifiers, the settings file); without
// the variable `swift build`, `make test` and a hub depending on us never see them.
if Context.environment["HAPI_PUSH_FUZZ"] == "1" {
    func fuzzTarget(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
        .executableTarget(name: name, dependencies: ["FuzzCheck"] + dependencies, path: "Tests/Fuzz/Sources/" + name)
    }
    package.targets += [
        .target(name: "FuzzCheck", path: "Tests/Fuzz/Sources/FuzzCheck"),
        fuzzTarget("FuzzRegistration", ["DeviceRegistry", "PushEnvelope"]),
        fuzzTarget("FuzzEnvelope", ["PushEnvelope"]),
        fuzzTarget("FuzzSettings", ["PushNative", "PushEnvelope"]),
        fuzzTarget("FuzzJSON", ["PushEnvelope"]),
        fuzzTarget("FuzzClassify", ["PushProviders", "PushTransports"]),
        fuzzTarget("FuzzURL", ["PushNative"]),
        fuzzTarget("FuzzCredentials", ["PushTransports", "PushEnvelope"]),
        fuzzTarget("FuzzSanitize", ["PushProviders"]),
        fuzzTarget("FuzzSubscription", ["DeviceRegistry", "PushEnvelope"]),
        fuzzTarget("FuzzEndpoint", ["PushEnvelope"]),
        fuzzTarget("FuzzVAPIDKeys", ["PushNative", "PushEnvelope"]),
        fuzzTarget("FuzzWebPushAnswer", ["PushProviders", "PushTransports"]),
    ]
}
