import Foundation
import PushLoopbackServer
import PushSync
import PushTestSupport
import Testing

@testable import PushHTTP

// Egress through an HTTP CONNECT proxy, against Debian's tinyproxy started per test: both
// engines, with and without Basic credentials, NO_PROXY, the proxy's refusals, a proxy that is
// down, an https:// proxy (tinyproxy behind a TLS front). The hub's own resolver is told it
// cannot resolve the origin's name, so a delivery proves the proxy resolved it.
@Suite(.serialized) struct ProxyTests {
    typealias Support = HTTPClientTests

    static let password = "proxy-Secret_42"

    /// A client that trusts `server`, with `environment` as its process environment, whose
    /// own resolver cannot resolve `localhost`.
    static func client(
        trusting server: LoopbackServer, environment: [String: String], httpsProxy: String? = nil, noProxy: String? = nil,
        caFile: String? = nil
    ) throws -> HTTPClient {
        var configuration = Support.trusting(server)
        if let caFile { configuration.additionalTrustedCAFile = caFile }
        configuration.maximumConnectionsPerHost = 1
        configuration.connectTimeout = .seconds(5)
        configuration.proxy = HTTPProxyConfiguration(httpsProxy: httpsProxy, noProxy: noProxy, environment: environment)
        configuration.resolverOverride = { host in host == "localhost" ? [] : nil }
        return try HTTPClient(configuration: configuration)
    }

    static func requests(_ count: Int, to server: LoopbackServer) -> [HTTPRequest] {
        (0..<count).map { HTTPRequest(method: .post, url: server.localhostBaseURL + "/p/\($0)", body: Array("push \($0)".utf8)) }
    }

    /// Issue 26: a CONNECT blocks its thread (libcurl), so tunnels have threads of their own.
    /// Two tunnels hang on a proxy that never answers; a direct request that needs a lookup
    /// meanwhile is answered at once (on the resolver's two threads it would wait for them).
    @Test func slowProxiesNeverHoldUpNameLookups() async throws {
        let silentProxy = try LoopbackServer(transport: .cleartext, silent: true) { _ in .json("{}") }
        defer { silentProxy.stop() }
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        var configuration = Support.trusting(server)
        configuration.connectTimeout = .seconds(4)
        configuration.proxy = HTTPProxyConfiguration(
            httpsProxy: "http://127.0.0.1:\(silentProxy.port)", noProxy: "localhost", environment: [:])
        configuration.resolverOverride = { host in host == "localhost" ? ["127.0.0.1"] : nil }
        let client = try HTTPClient(configuration: configuration)
        let stuck = (1...2).map { index in
            Task {
                try? await client.execute(
                    HTTPClientRequest(origin: try HTTPOrigin("https://stuck\(index).example"), path: "/"), deadline: .now + .seconds(5))
            }
        }
        try await Task.sleep(for: .milliseconds(300))  // both CONNECTs are under way
        #expect(silentProxy.connectionsAccepted == 2)
        let started = ContinuousClock.now
        let response = try await client.execute(
            HTTPClientRequest(origin: HTTPOrigin(server.localhostBaseURL), path: "/direct"), deadline: .now + .seconds(3))
        #expect(response.status == 200)
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(client.statistics.hostLookups == 1)
        for task in stuck { _ = await task.value }
        await client.shutdown()
    }

    // MARK: - Through the proxy

    @Test func http2RequestsTunnelThroughAnAuthenticatedProxyOnOneConnection() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        let proxy = try Tinyproxy(connectPorts: [server.port], user: "hub", password: Self.password)
        defer { proxy.stop() }
        let client = try Self.client(trusting: server, environment: ["HTTPS_PROXY": proxy.url()])
        let outcomes = await client.send(Self.requests(50, to: server))
        let statuses = outcomes.map { (try? $0.result.get().status) ?? 0 }
        #expect(statuses == Array(repeating: 200, count: 50), "\(outcomes.first.map { "\($0.result)" } ?? "")")
        #expect(outcomes.allSatisfy { (try? $0.result.get().headers.first(name: "x-http-version")) == "2" })
        // The name went to the proxy in CONNECT; our resolver was never asked.
        #expect(proxy.connectTargets == ["localhost:\(server.port)"], "\(proxy.log)")
        #expect(client.statistics.hostLookups == 0)
        #expect(server.connectionsAccepted == 1)
        // Reused: a second batch opens no new tunnel.
        let again = await client.send(Self.requests(10, to: server))
        #expect(again.allSatisfy { (try? $0.result.get().status) == 200 })
        #expect(proxy.connectTargets.count == 1)
        await client.shutdown()
    }

    @Test func aProxyWithoutCredentialsAndTheLowerCaseVariableWinning() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        let proxy = try Tinyproxy(connectPorts: [server.port])
        defer { proxy.stop() }
        let (deadFD, deadPort) = try Support.boundButNotListening()
        defer { close(deadFD) }
        let client = try Self.client(
            trusting: server, environment: ["https_proxy": proxy.url(), "HTTPS_PROXY": "http://127.0.0.1:\(deadPort)"])
        let result = await client.result(HTTPRequest(url: server.localhostBaseURL + "/plain"))
        #expect((try? result.get().status) == 200, "\(result)")
        #expect(proxy.connectTargets == ["localhost:\(server.port)"])
        await client.shutdown()
    }

    @Test func http1OriginsTunnelThroughTheProxyWithLibcurl() async throws {
        let server = try LoopbackServer(transport: .cleartext, handler: Support.echo)
        defer { server.stop() }
        let proxy = try Tinyproxy(connectPorts: [server.port], user: "hub", password: Self.password)
        defer { proxy.stop() }
        // http origins read http_proxy, never HTTPS_PROXY.
        let client = try Self.client(trusting: server, environment: ["http_proxy": proxy.url(), "HTTPS_PROXY": "http://127.0.0.1:1"])
        let result = await client.result(HTTPRequest(method: .post, url: "http://localhost:\(server.port)/h1", body: [1, 2, 3]))
        #expect((try? result.get().status) == 200, "\(result)")
        #expect((try? result.get().headers.first(name: "x-http-version")) == "1")
        #expect(proxy.connectTargets == ["localhost:\(server.port)"], "\(proxy.log)")
        await client.shutdown()
    }

    @Test func anHTTPSProxyIsVerifiedAndTunnels() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        let proxy = try Tinyproxy(connectPorts: [server.port], user: "hub", password: Self.password, tls: true)
        defer { proxy.stop() }
        // One CA file for both: the origin's CA and the proxy front's.
        let bundle = proxy.directory + "/both-cas.pem"
        let origin = try String(contentsOfFile: try #require(server.caCertificatePath), encoding: .utf8)
        let front = try String(contentsOfFile: try #require(proxy.tlsCAPath), encoding: .utf8)
        try (origin + "\n" + front).write(toFile: bundle, atomically: true, encoding: .utf8)
        let client = try Self.client(trusting: server, environment: [:], httpsProxy: proxy.url(tls: true), caFile: bundle)
        let outcomes = await client.send(Self.requests(5, to: server))
        #expect(outcomes.allSatisfy { (try? $0.result.get().status) == 200 }, "\(outcomes.first.map { "\($0.result)" } ?? "")")
        #expect(proxy.connectTargets.first == "localhost:\(server.port)", "\(proxy.log)")

        // Not trusting the proxy's CA: the TLS to the proxy fails, nothing is tunnelled.
        let strict = try Self.client(trusting: server, environment: [:], httpsProxy: proxy.url(tls: true))
        let refused = await strict.result(HTTPRequest(url: server.localhostBaseURL + "/unverified"))
        #expect(refused.failure == .tlsFailure, "\(refused)")
        await strict.shutdown()
        await client.shutdown()
    }

    // MARK: - NO_PROXY

    @Test func noProxyMatchingGoesDirectAndNotMatchingGoesThroughTheProxy() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        let proxy = try Tinyproxy(connectPorts: [server.port])
        defer { proxy.stop() }
        var configuration = Support.trusting(server)
        configuration.proxy = HTTPProxyConfiguration(environment: ["HTTPS_PROXY": proxy.url(), "NO_PROXY": "example.com, .LOCALHOST"])
        let direct = try HTTPClient(configuration: configuration)
        #expect((try? await direct.send(HTTPRequest(url: server.localhostBaseURL + "/direct")).status) == 200)
        #expect(proxy.connectTargets.isEmpty)
        #expect(try direct.proxyRoute(for: server.localhostBaseURL).description == "direct (NO_PROXY matches .LOCALHOST)")
        await direct.shutdown()

        configuration.proxy = HTTPProxyConfiguration(environment: ["HTTPS_PROXY": proxy.url(), "NO_PROXY": "example.com,127.0.0.0/8"])
        let proxied = try HTTPClient(configuration: configuration)
        #expect((try? await proxied.send(HTTPRequest(url: server.localhostBaseURL + "/proxied")).status) == 200)
        #expect(proxy.connectTargets == ["localhost:\(server.port)"])
        await proxied.shutdown()
    }

    // MARK: - Refusals

    @Test func aWrongPasswordFailsAsProxyAuthRequiredWithoutShowingIt() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        let proxy = try Tinyproxy(connectPorts: [server.port], user: "hub", password: Self.password)
        defer { proxy.stop() }
        for (engineName, url, environment) in [
            ("h2", server.localhostBaseURL + "/auth", ["HTTPS_PROXY": proxy.url(password: "wrong-secret-1")]),
            ("libcurl", "http://localhost:\(server.port)/auth", ["HTTP_PROXY": proxy.url(password: "wrong-secret-1")]),
        ] {
            let client = try Self.client(trusting: server, environment: environment)
            let result = await client.result(HTTPRequest(url: url))
            #expect(result.failure == .proxyAuthRequired, "\(engineName): \(result)")
            let text = "\(result.failure.map { "\($0)" } ?? "")"
            #expect(!text.contains("wrong-secret-1") && text.contains("***"), "\(engineName): \(text)")
            await client.shutdown()
        }
        #expect(server.requestsHandled == 0)
    }

    @Test func aPortTheProxyWillNotTunnelToIsRefusedWithItsStatus() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        let proxy = try Tinyproxy(connectPorts: [443])
        defer { proxy.stop() }
        let client = try Self.client(trusting: server, environment: ["HTTPS_PROXY": proxy.url()])
        let result = await client.result(HTTPRequest(url: server.localhostBaseURL + "/port"))
        #expect(result.failure == .proxyRefused, "\(result)")
        #expect(result.failure?.detail?.contains("403") == true)
        await client.shutdown()
    }

    @Test func aProxyThatIsDownIsAConnectFailure() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        let (deadFD, deadPort) = try Support.boundButNotListening()
        defer { close(deadFD) }
        let client = try Self.client(trusting: server, environment: ["HTTPS_PROXY": "http://hub:\(Self.password)@127.0.0.1:\(deadPort)"])
        let started = ContinuousClock.now
        let result = await client.result(HTTPRequest(url: server.localhostBaseURL + "/down"))
        #expect(result.failure == .connectionRefused, "\(result)")
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(!"\(result)".contains(Self.password))
        #expect(server.connectionsAccepted == 0)
        await client.shutdown()
    }

    @Test func anUnusableProxyURLFailsRequestsRatherThanBypassingIt() async throws {
        let server = try LoopbackServer(transport: .tls, handler: Support.echo)
        defer { server.stop() }
        let client = try Self.client(trusting: server, environment: ["HTTPS_PROXY": "socks5://user:pw-9@127.0.0.1:1080"])
        let result = await client.result(HTTPRequest(url: server.localhostBaseURL + "/socks"))
        #expect(result.failure == .invalidConfiguration)
        #expect(result.failure?.detail?.contains("SOCKS") == true, "\(result)")
        #expect(!"\(result)".contains("pw-9"))
        #expect(server.connectionsAccepted == 0)
        await client.shutdown()
        let setting = try HTTPClient(configuration: .init(proxy: HTTPProxyConfiguration(httpsProxy: "ftp://u:pw-9@proxy", environment: [:])))
        let refused = await setting.result(HTTPRequest(url: server.localhostBaseURL + "/ftp"))
        #expect(refused.failure == .invalidConfiguration)
        #expect(refused.failure?.detail?.hasPrefix("httpsProxy:") == true, "\(refused)")
        #expect(!"\(refused)".contains("pw-9"))
        await setting.shutdown()
    }
}

/// The environment and NO_PROXY as curl and Go read them, without a network.
@Suite struct ProxyConfigurationTests {
    func route(_ environment: [String: String], https: Bool = true, host: String = "api.push.apple.com", port: Int = 443,
               httpsProxy: String? = nil, noProxy: String? = nil) -> String {
        HTTPProxyConfiguration(httpsProxy: httpsProxy, noProxy: noProxy, environment: environment)
            .route(isTLS: https, host: host, port: port).description
    }

    @Test func variablesByScheme() {
        #expect(route([:]) == "direct (no proxy configured)")
        #expect(route(["HTTPS_PROXY": "http://p:3128"]) == "http://p:3128 (HTTPS_PROXY)")
        #expect(route(["HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:2"]) == "http://lower:2 (https_proxy)")
        // Never HTTP_PROXY for https.
        #expect(route(["HTTP_PROXY": "http://p:3128"]) == "direct (no proxy configured)")
        #expect(route(["HTTP_PROXY": "http://p:3128"], https: false, port: 80) == "http://p:3128 (HTTP_PROXY)")
        #expect(route(["ALL_PROXY": "http://all:1"]) == "http://all:1 (ALL_PROXY)")
        #expect(route(["ALL_PROXY": "http://all:1", "all_proxy": "http://low:2"]) == "http://low:2 (all_proxy)")
        #expect(route(["HTTPS_PROXY": "proxy.corp:8080"]) == "http://proxy.corp:8080 (HTTPS_PROXY)")
        #expect(route(["HTTPS_PROXY": "https://proxy.corp"]) == "https://proxy.corp:443 (HTTPS_PROXY)")
        #expect(route(["HTTPS_PROXY": "http://proxy.corp"]) == "http://proxy.corp:80 (HTTPS_PROXY)")
        #expect(route(["HTTPS_PROXY": "   "]) == "direct (no proxy configured)")
    }

    @Test func settingsOverrideTheEnvironment() {
        #expect(route(["HTTPS_PROXY": "http://env:1"], httpsProxy: "http://set:2") == "http://set:2 (httpsProxy)")
        #expect(route(["HTTPS_PROXY": "http://env:1"], httpsProxy: "") == "direct (httpsProxy is empty)")
        #expect(route(["HTTPS_PROXY": "http://env:1", "NO_PROXY": "*"], noProxy: "") == "http://env:1 (HTTPS_PROXY)")
        #expect(route(["HTTPS_PROXY": "http://env:1"], noProxy: "apple.com") == "direct (noProxy matches apple.com)")
    }

    @Test func noProxyEntries() {
        func direct(_ list: String, _ host: String, port: Int = 443) -> Bool {
            NoProxyList(list).match(host: host, port: port) != nil
        }
        #expect(direct("*", "anything.example"))
        #expect(direct("apple.com", "apple.com"))
        #expect(direct("apple.com", "api.push.apple.com"))
        #expect(direct(".apple.com", "api.push.apple.com"))
        #expect(direct(".apple.com", "apple.com"))
        #expect(direct("*.apple.com", "api.push.apple.com"))
        #expect(!direct("apple.com", "notapple.com"))
        #expect(!direct("push.apple.com", "apple.com"))
        #expect(direct("APPLE.COM.", "Api.Push.Apple.Com"))
        #expect(direct("corp.internal, fcm.googleapis.com", "fcm.googleapis.com"))
        #expect(direct("10.0.0.5", "10.0.0.5"))
        #expect(!direct("10.0.0.5", "10.0.0.6"))
        #expect(direct("10.0.0.0/8", "10.200.1.1"))
        #expect(!direct("10.0.0.0/8", "11.0.0.1"))
        #expect(direct("fd00::/8", "fd12::1"))
        #expect(direct("::1", "::1"))
        #expect(direct("[::1]:443", "::1"))
        #expect(!direct("[::1]:80", "::1"))
        #expect(direct("relay.corp:8443", "relay.corp", port: 8443))
        #expect(!direct("relay.corp:8443", "relay.corp", port: 443))
        #expect(!direct("", "apple.com"))
        #expect(!direct(" , ", "apple.com"))
    }

    @Test func credentialsAreDecodedAndNeverPrinted() throws {
        let proxy = try HTTPProxy(url: "http://us%40er:p%3Ass%2Fw@proxy.corp:3128")
        #expect(proxy.user == "us@er")
        #expect(proxy.password == "p:ss/w")
        #expect(proxy.description == "http://us@er:***@proxy.corp:3128")
        #expect(!"\(HTTPProxyRoute.proxy(proxy, source: "HTTPS_PROXY"))".contains("p:ss"))
        #expect(HTTPProxy.redact("http://u:secret@h:1/x") == "http://u:***@h:1/x")
        #expect(HTTPProxy.redact("http://h:1") == "http://h:1")
        #expect(HTTPProxy.redact("http://u:se/cr@et@h:1") == "http://u:***@h:1")
        #expect(throws: HTTPClientError.invalidConfiguration) { try HTTPProxy(url: "socks5://h:1") }
        do {
            _ = try HTTPProxy(url: "http://u:topsecret@")
            Issue.record("a URL without a host parsed")
        } catch {
            #expect(!"\(error)".contains("topsecret"))
        }
    }
}
