// swift-tools-version:6.0
import PackageDescription

// libFuzzer harnesses for hapi-push-native, kept out of the main package so `swift build` and
// `make test` never see them. Build and run with `make fuzz` (scripts/fuzz.sh): every target is
// compiled with `-sanitize=fuzzer,address`, and libFuzzer supplies `main`.
/// A path dependency's identity is its directory's name, which differs between checkouts.
let root = String(Context.packageDirectory.split(separator: "/").dropLast(2).last ?? "hapi-push-native")
func library(_ name: String) -> Target.Dependency { .product(name: name, package: root) }

let package = Package(
    name: "hapi-push-fuzz",
    dependencies: [.package(path: "../..")],
    targets: [
        .target(name: "FuzzCheck"),
        .executableTarget(name: "FuzzRegistration", dependencies: ["FuzzCheck", library("DeviceRegistry"), library("PushEnvelope")]),
        .executableTarget(name: "FuzzEnvelope", dependencies: ["FuzzCheck", library("PushEnvelope")]),
        .executableTarget(name: "FuzzSettings", dependencies: ["FuzzCheck", library("PushNative")]),
        .executableTarget(name: "FuzzJSON", dependencies: ["FuzzCheck", library("PushEnvelope")]),
        .executableTarget(name: "FuzzClassify", dependencies: ["FuzzCheck", library("PushTransports")]),
        .executableTarget(name: "FuzzURL", dependencies: ["FuzzCheck", library("PushNative")]),
        .executableTarget(name: "FuzzCredentials", dependencies: ["FuzzCheck", library("PushTransports"), library("PushEnvelope")]),
        .executableTarget(name: "FuzzSanitize", dependencies: ["FuzzCheck", library("PushTransports")]),
    ]
)
