import CHapiMicrohttpd
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushEnvelope
import PushHTTP
import PushTransports

/// Why the relay cannot start. The message names the variable to fix and never holds key
/// material.
public struct PushRelayStartupError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension PushRelayConfiguration {
    /// Reads the relay's environment. An empty variable counts as unset; one that is only
    /// whitespace is refused, as are a partial APNs configuration, an unreadable or malformed
    /// key, an unknown `RELAY_APNS_ENV`, a port that is not a port, and nothing configured.
    ///
    /// | variable | meaning | default |
    /// | --- | --- | --- |
    /// | `RELAY_APNS_KEY_P8_PATH`, `RELAY_APNS_KEY_ID`, `RELAY_APNS_TEAM_ID`, `RELAY_APNS_BUNDLE_ID` | iOS: all four or none | — |
    /// | `RELAY_APNS_ENV` | `production` or `sandbox` | `production` |
    /// | `RELAY_APNS_ENDPOINT` | base URL replacing Apple's | from `RELAY_APNS_ENV` |
    /// | `RELAY_FCM_SERVICE_ACCOUNT_PATH` | Android: service-account JSON | — |
    /// | `RELAY_FCM_PACKAGE_NAME` | `restricted_package_name` | `run.hapi.companion` |
    /// | `RELAY_FCM_ENDPOINT` | base URL replacing Google's | `https://fcm.googleapis.com` |
    /// | `RELAY_HOST` | bind address | `0.0.0.0` |
    /// | `RELAY_PORT` | listen port, 0 = any free one | `8790` |
    /// | `RELAY_TRUST_PROXY` | `1`/`true`: rate-limit by the first `X-Forwarded-For` hop | off |
    /// | `RELAY_CA_FILE` | extra CA (PEM) trusted outbound | system store only |
    /// | `RELAY_HTTPS_PROXY` | egress proxy `http(s)://[user:password@]host:port`, overriding `HTTPS_PROXY`; empty = direct | `HTTPS_PROXY`, `ALL_PROXY` |
    /// | `RELAY_NO_PROXY` | hosts that bypass the proxy, overriding `NO_PROXY` | `NO_PROXY` |
    /// | `RELAY_METRICS_PORT` | Prometheus text on 127.0.0.1:PORT/metrics | off |
    /// | `RELAY_REDIS_URL` | `redis://` or `rediss://`: rate limits shared in Redis | in memory |
    /// | `RELAY_REDIS_CA_FILE` | extra CA (PEM) trusted for `rediss://` | `RELAY_CA_FILE` |
    /// | `RELAY_MAX_CONNECTIONS` | client connections at once | soft `RLIMIT_NOFILE` less 256 |
    /// | `RELAY_MAX_CONNECTIONS_PER_IP` | connections at once per peer address, 0 = no limit | 64 (no limit with `RELAY_TRUST_PROXY`) |
    /// | `RELAY_CONNECTION_MEMORY_BYTES` | memory per connection for request line, headers and buffers, 2048–1048576 | 4096 |
    ///
    /// Credential files are read here, once: call this at start-up, not on a hot path.
    public init(environment: [String: String]) throws(PushRelayStartupError) {
        let reader = EnvironmentReader(environment)
        self.init()
        host = try reader.value("RELAY_HOST") ?? "0.0.0.0"
        guard RelayBindAddress(host: host, port: 0) != nil else {
            throw PushRelayStartupError("RELAY_HOST must be an IPv4 or IPv6 address (or localhost), got \"\(Self.excerpt(host))\"")
        }
        port = try reader.port("RELAY_PORT") ?? Self.defaultPort
        metricsPort = try reader.port("RELAY_METRICS_PORT")
        trustProxy = try reader.flag("RELAY_TRUST_PROXY")
        // Behind a trusted proxy every connection comes from the proxy: limiting its address
        // would limit everyone, so the proxy does its own unless one is set explicitly.
        server.connectionsPerAddress = try reader.count("RELAY_MAX_CONNECTIONS_PER_IP", allowZero: true)
            ?? (trustProxy ? 0 : Server.defaultConnectionsPerAddress)
        if let bytes = try reader.count("RELAY_CONNECTION_MEMORY_BYTES", allowZero: false) {
            guard bytes >= Server.minimumConnectionMemoryBytes, bytes <= 1 << 20 else {
                throw PushRelayStartupError(
                    "RELAY_CONNECTION_MEMORY_BYTES must be from \(Server.minimumConnectionMemoryBytes) to 1048576, got \(bytes)")
            }
            server.connectionMemoryLimitBytes = bytes
        }
        let descriptors = Platform.descriptorLimit ?? -1
        if let limit = try reader.count("RELAY_MAX_CONNECTIONS", allowZero: false) {
            if descriptors > 0, limit > descriptors - Server.reservedDescriptors {
                throw PushRelayStartupError(
                    "RELAY_MAX_CONNECTIONS=\(limit) needs \(limit + Server.reservedDescriptors) file descriptors, but the limit (RLIMIT_NOFILE) is \(descriptors): raise it (LimitNOFILE=, ulimit -n) or lower RELAY_MAX_CONNECTIONS")
            }
            server.connectionLimit = limit
        } else {
            server.connectionLimit = Server.defaultConnectionLimit
        }
        caFile = try reader.value("RELAY_CA_FILE")
        if let caFile {
            // The client's own check: a file it would refuse stops the relay here, with the reason.
            do {
                _ = try HTTPTrustRoots.readAdditionalCAFile(caFile)
            } catch {
                throw PushRelayStartupError("RELAY_CA_FILE: \(Self.excerpt(error.detail ?? "\(caFile) is unusable"))")
            }
        }
        // An empty RELAY_HTTPS_PROXY counts as unset for the reader: "direct" is `NO_PROXY=*`.
        httpsProxy = try reader.value("RELAY_HTTPS_PROXY")
        noProxy = try reader.value("RELAY_NO_PROXY")
        proxyEnvironment = environment.filter { HTTPProxyConfiguration.variableNames.contains($0.key) }
        if let httpsProxy {
            // A proxy that cannot be used stops the relay here, the password shown as ***.
            do {
                _ = try HTTPProxy(url: httpsProxy)
            } catch {
                throw PushRelayStartupError("RELAY_HTTPS_PROXY: \(Self.excerpt(error.detail ?? "not a proxy URL"))")
            }
        }
        let redisCAFile = try reader.value("RELAY_REDIS_CA_FILE")
        if let url = try reader.value("RELAY_REDIS_URL") {
            var redis = try PushRelayRedisConfiguration(url: url)
            if let redisCAFile {
                guard redis.usesTLS else {
                    throw PushRelayStartupError("RELAY_REDIS_CA_FILE is only for rediss:// (TLS), but RELAY_REDIS_URL is redis://")
                }
                // The same check as RELAY_CA_FILE's: readable, bounded, with a PEM certificate.
                do {
                    _ = try HTTPTrustRoots.readAdditionalCAFile(redisCAFile)
                } catch {
                    // The detail is "PATH why": long enough for a long path and its reason.
                    throw PushRelayStartupError("RELAY_REDIS_CA_FILE: \(SafeText.sanitize(error.detail ?? "\(redisCAFile) is unusable", limit: 320))")
                }
                redis.caFile = redisCAFile
                redis.caFileVariable = "RELAY_REDIS_CA_FILE"
            } else if redis.usesTLS, let caFile {
                redis.caFile = caFile
                redis.caFileVariable = "RELAY_CA_FILE"
            }
            self.redis = redis
        } else if redisCAFile != nil {
            throw PushRelayStartupError("RELAY_REDIS_CA_FILE is set but RELAY_REDIS_URL is not: set both (rediss://…) or neither")
        }

        let apnsNames = ["RELAY_APNS_KEY_P8_PATH", "RELAY_APNS_KEY_ID", "RELAY_APNS_TEAM_ID", "RELAY_APNS_BUNDLE_ID"]
        var apnsValues: [String: String] = [:]
        for name in apnsNames { apnsValues[name] = try reader.value(name) }
        let environmentName = try reader.value("RELAY_APNS_ENV")?.lowercased() ?? "production"
        guard let apnsEnvironment = APNs.Environment(rawValue: environmentName) else {
            throw PushRelayStartupError("RELAY_APNS_ENV must be production or sandbox, got \"\(Self.excerpt(environmentName))\"")
        }
        let apnsEndpoint = try reader.url("RELAY_APNS_ENDPOINT")
        if !apnsValues.isEmpty {
            let missing = apnsNames.filter { apnsValues[$0] == nil }
            guard missing.isEmpty else {
                throw PushRelayStartupError(
                    "partial APNs configuration: \(missing.joined(separator: ", ")) \(missing.count == 1 ? "is" : "are") missing (iOS needs all of \(apnsNames.joined(separator: ", ")))")
            }
            let path = apnsValues["RELAY_APNS_KEY_P8_PATH"] ?? ""
            for name in ["RELAY_APNS_KEY_ID", "RELAY_APNS_TEAM_ID", "RELAY_APNS_BUNDLE_ID"] {
                let value = apnsValues[name] ?? ""
                guard value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                    throw PushRelayStartupError("\(name) must be printable ASCII without spaces, got \"\(Self.excerpt(value))\"")
                }
            }
            let pem = try Self.readCredential(path, variable: "RELAY_APNS_KEY_P8_PATH")
            let credentials: APNsCredentials
            do {
                credentials = try APNsCredentials(
                    pem: pem, keyId: apnsValues["RELAY_APNS_KEY_ID"] ?? "", teamId: apnsValues["RELAY_APNS_TEAM_ID"] ?? "",
                    bundleId: apnsValues["RELAY_APNS_BUNDLE_ID"] ?? "")
            } catch {
                throw PushRelayStartupError("RELAY_APNS_KEY_P8_PATH (\(path)): \(error.message)")
            }
            apns = APNs(credentials: credentials, environment: apnsEnvironment, endpoint: apnsEndpoint)
        }

        let packageName = try reader.value("RELAY_FCM_PACKAGE_NAME") ?? FCM.defaultPackageName
        guard Self.isApplicationId(packageName) else {
            throw PushRelayStartupError("RELAY_FCM_PACKAGE_NAME must be an Android application id such as run.hapi.companion, got \"\(Self.excerpt(packageName))\"")
        }
        let fcmEndpoint = try reader.url("RELAY_FCM_ENDPOINT")
        if let path = try reader.value("RELAY_FCM_SERVICE_ACCOUNT_PATH") {
            let json = try Self.readCredential(path, variable: "RELAY_FCM_SERVICE_ACCOUNT_PATH")
            let account: FCMServiceAccount
            do {
                account = try FCMServiceAccount(json: json, source: "RELAY_FCM_SERVICE_ACCOUNT_PATH (\(path))", path: path)
            } catch {
                throw PushRelayStartupError(error.message)
            }
            fcm = FCM(account: account, packageName: packageName, endpoint: fcmEndpoint)
        }

        guard apns != nil || fcm != nil else {
            throw PushRelayStartupError(
                "no provider configured: set RELAY_APNS_KEY_P8_PATH, RELAY_APNS_KEY_ID, RELAY_APNS_TEAM_ID and RELAY_APNS_BUNDLE_ID (iOS), RELAY_FCM_SERVICE_ACCOUNT_PATH (Android), or both")
        }
    }

    /// Every variable `init(environment:)` reads.
    public static let environmentVariables = [
        "RELAY_APNS_KEY_P8_PATH", "RELAY_APNS_KEY_ID", "RELAY_APNS_TEAM_ID", "RELAY_APNS_BUNDLE_ID", "RELAY_APNS_ENV", "RELAY_APNS_ENDPOINT",
        "RELAY_FCM_SERVICE_ACCOUNT_PATH", "RELAY_FCM_PACKAGE_NAME", "RELAY_FCM_ENDPOINT", "RELAY_HOST", "RELAY_PORT", "RELAY_TRUST_PROXY",
        "RELAY_CA_FILE", "RELAY_METRICS_PORT", "RELAY_REDIS_URL", "RELAY_REDIS_CA_FILE", "RELAY_MAX_CONNECTIONS",
        "RELAY_MAX_CONNECTIONS_PER_IP", "RELAY_CONNECTION_MEMORY_BYTES", "RELAY_HTTPS_PROXY", "RELAY_NO_PROXY",
    ] + HTTPProxyConfiguration.variableNames

    /// The relay's variables in the running process.
    public static var processEnvironment: [String: String] {
        var result: [String: String] = [:]
        for name in environmentVariables {
            if let value = getenv(name) { result[name] = String(cString: value) }
        }
        return result
    }

    /// Reads a credential file (a regular file of at most 1 MiB), naming the variable on failure.
    static func readCredential(_ path: String, variable: String) throws(PushRelayStartupError) -> [UInt8] {
        do {
            return try CredentialFile.read(path, setting: variable)
        } catch {
            throw PushRelayStartupError(error.message)
        }
    }

    /// Dot-separated segments, each a letter followed by letters, digits or underscores.
    static func isApplicationId(_ text: String) -> Bool {
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count >= 2 else { return false }
        return segments.allSatisfy { segment in
            guard let first = segment.utf8.first, (0x41...0x5A).contains(first) || (0x61...0x7A).contains(first) else { return false }
            return segment.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
        }
    }

    /// At most 80 printable characters of an operator's value, for an error message.
    static func excerpt(_ text: String) -> String {
        SafeText.sanitize(text, limit: 80)
    }
}

/// Environment lookups with the relay's rules: trimmed, empty is unset, whitespace is an error.
private struct EnvironmentReader {
    let environment: [String: String]
    init(_ environment: [String: String]) { self.environment = environment }

    func value(_ name: String) throws(PushRelayStartupError) -> String? {
        guard let raw = environment[name], !raw.isEmpty else { return nil }
        let trimmed = Self.trimmed(raw)
        guard !trimmed.isEmpty else { throw PushRelayStartupError("\(name) is set but only whitespace: give it a value or unset it") }
        return trimmed
    }

    func port(_ name: String) throws(PushRelayStartupError) -> Int? {
        guard let text = try value(name) else { return nil }
        guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), text.utf8.count <= 5, let port = Int(text), (0...65535).contains(port) else {
            throw PushRelayStartupError("\(name) must be a port number from 0 to 65535, got \"\(PushRelayConfiguration.excerpt(text))\"")
        }
        return port
    }

    /// A count of at most 10,000,000 (0 only where it means "no limit").
    func count(_ name: String, allowZero: Bool) throws(PushRelayStartupError) -> Int? {
        guard let text = try value(name) else { return nil }
        guard text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), text.utf8.count <= 8, let count = Int(text), count <= 10_000_000,
            allowZero || count > 0
        else {
            throw PushRelayStartupError(
                "\(name) must be a whole number from \(allowZero ? 0 : 1) to 10000000, got \"\(PushRelayConfiguration.excerpt(text))\"")
        }
        return count
    }

    func flag(_ name: String) throws(PushRelayStartupError) -> Bool {
        guard let text = try value(name) else { return false }
        switch text.lowercased() {
        case "1", "true": return true
        case "0", "false": return false
        default: throw PushRelayStartupError("\(name) must be 1, true, 0 or false, got \"\(PushRelayConfiguration.excerpt(text))\"")
        }
    }

    /// A provider endpoint override: the hub's rules (`HTTPBaseURL`): https, or http only to
    /// loopback; no query, fragment or user info; a valid port.
    func url(_ name: String) throws(PushRelayStartupError) -> String? {
        guard let text = try value(name) else { return nil }
        do {
            return try HTTPBaseURL(text, cleartext: .loopbackOnly).text
        } catch {
            let shown = PushRelayConfiguration.excerpt(HTTPBaseURL.redactingPassword(text))
            throw PushRelayStartupError("\(name) \(error.message), got \"\(shown)\"")
        }
    }

    static func trimmed(_ text: String) -> String {
        var scalars = Substring(text).unicodeScalars
        while let first = scalars.first, first.properties.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
        return String(String.UnicodeScalarView(scalars))
    }
}
