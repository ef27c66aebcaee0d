import PushLoopbackServer
import PushSync
import PushTestSupport
import Testing

@testable import PushHTTP

/// Issue 26 item 5: one request API (`execute(_:deadline:)`) taking an origin parsed once, and
/// the address policy per request, so one client serves trusted origins and Web Push endpoints.
@Suite struct HTTPClientExecuteTests {
    static func deadline() -> ContinuousClock.Instant { .now + .seconds(10) }

    @Test(arguments: [LoopbackServer.Transport.tls, .cleartext])
    func executeSendsTheOriginPathHeadersAndBodyAsGiven(_ transport: LoopbackServer.Transport) async throws {
        let seen = Locked<[LoopbackServer.Request]>([])
        let server = try LoopbackServer(transport: transport) { request in
            seen.withLock { $0.append(request) }
            return .init(status: 202, body: Array("ok".utf8))
        }
        defer { server.stop() }
        let client = try HTTPClient(configuration: .init(additionalTrustedCAFile: server.caCertificatePath))
        let base = try HTTPBaseURL(server.baseURL + "/prefix/")
        #expect(base.origin == (try HTTPOrigin(server.baseURL)))
        #expect(base.path == "/prefix")
        let request = HTTPClientRequest(
            origin: HTTPOrigin(base), method: .put, path: base.path + "/a%2Fb?x=1", headers: ["x-hapi": "1"], body: [7, 8])
        let response = try await client.execute(request, deadline: Self.deadline())
        #expect(response.status == 202)
        #expect(response.body == Array("ok".utf8))
        let received = try #require(seen.withLock { $0.first })
        #expect(received.method == "PUT")
        #expect(received.path == "/prefix/a%2Fb?x=1")
        #expect(received.authority == "127.0.0.1:\(server.port)")
        #expect(received.header("x-hapi") == "1")
        #expect(received.body == [7, 8])
        #expect(received.httpVersion == (transport == .tls ? 2 : 1))
        await client.shutdown()
    }

    @Test func anOriginIsSchemeHostAndPortOnly() throws {
        #expect(try HTTPOrigin("https://API.push.apple.com").description == "https://api.push.apple.com")
        #expect(try HTTPOrigin("https://[::1]:8443/").authority == "[::1]:8443")
        #expect(try HTTPOrigin("http://127.0.0.1").port == 80)
        for text in ["https://h/path", "https://h?q", "https://u:pw@h", "ftp://h", "h", "https://h#f"] {
            #expect(throws: HTTPClientError.invalidRequest, "\(text)") { _ = try HTTPOrigin(text) }
        }
    }

    @Test func aPathThatIsNotAPathIsRefusedBeforeAnythingIsSent() async throws {
        let server = try LoopbackServer { _ in .init(status: 200) }
        defer { server.stop() }
        let client = try HTTPClient(configuration: .init(additionalTrustedCAFile: server.caCertificatePath))
        let origin = try HTTPOrigin(server.baseURL)
        for path in ["", "relative", "/a b", "/a#frag", "/é"] {
            await #expect(throws: HTTPClientError.invalidRequest, "\(path)") {
                _ = try await client.execute(HTTPClientRequest(origin: origin, path: path), deadline: Self.deadline())
            }
        }
        #expect(server.connectionsAccepted == 0)
        await client.shutdown()
    }

    /// One client, both policies: a `.publicOnly` request is refused on loopback although the
    /// same client (and the same origin) has an open connection there under `.any`.
    @Test(arguments: [LoopbackServer.Transport.tls, .cleartext])
    func theAddressPolicyIsPerRequestAndNeverSharesAConnection(_ transport: LoopbackServer.Transport) async throws {
        let server = try LoopbackServer(transport: transport) { _ in .init(status: 201) }
        defer { server.stop() }
        let client = try HTTPClient(configuration: .init(additionalTrustedCAFile: server.caCertificatePath))
        let origin = try HTTPOrigin(server.localhostBaseURL)
        let trusted = HTTPClientRequest(origin: origin, method: .post, path: "/push/x", body: [1])
        var untrusted = trusted
        untrusted.addressPolicy = .publicOnly
        await #expect(throws: HTTPClientError.self) { _ = try await client.execute(untrusted, deadline: Self.deadline()) }
        #expect(server.connectionsAccepted == 0)
        #expect(try await client.execute(trusted, deadline: Self.deadline()).status == 201)
        #expect(server.connectionsAccepted == 1)
        // The `.any` connection is open and idle now; the `.publicOnly` request must not ride it.
        await #expect(throws: HTTPClientError.self) { _ = try await client.execute(untrusted, deadline: Self.deadline()) }
        #expect(try await client.execute(trusted, deadline: Self.deadline()).status == 201)
        #expect(server.connectionsAccepted == 1)
        if transport == .tls {
            await #expect(throws: HTTPClientError.addressNotAllowed) { _ = try await client.execute(untrusted, deadline: Self.deadline()) }
        }
        await client.shutdown()
    }
}
