import PushLoopbackServer
import Testing

@testable import PushHTTP

// A configured endpoint is parsed once; each request to it carries origin and path, and goes
// exactly where the URL text would have gone.
@Suite struct HTTPEndpointTests {
    @Test func requestsCarryTheOriginParsedOnceAndThePathAfterTheBasesOwn() throws {
        let plain = HTTPEndpoint("https://push.example.org//")
        #expect(plain.text == "https://push.example.org")
        let request = plain.request(method: .post, path: "/v1/push", headers: HTTPHeaders(), body: [1])
        #expect(request.carriesRoute)
        #expect(request.url == "https://push.example.org/v1/push")
        let route = try request.route
        #expect(route.origin == (try HTTPOrigin("https://push.example.org")))
        #expect(route.path == "/v1/push")

        let prefixed = HTTPEndpoint("https://push.example.org:8443/relay/")
        let under = try prefixed.request(method: .post, path: "/v1/push", headers: HTTPHeaders(), body: []).route
        #expect(under.origin.port == 8443)
        #expect(under.path == "/relay/v1/push")
    }

    @Test func aPathLibcurlWouldRewriteGoesAsAURLAndEndsWhereTheURLWould() throws {
        let endpoint = HTTPEndpoint("https://push.example.org")
        let dotted = endpoint.request(method: .get, path: "/a/../b", headers: HTTPHeaders(), body: [])
        #expect(!dotted.carriesRoute)
        #expect(try dotted.route.path == (try HTTPRoute.parse("https://push.example.org/a/../b")).path)
    }

    @Test func anEndpointThatDoesNotParseFailsItsRequestsWhenSentAndNeverShowsUserInfo() async throws {
        let withQuery = HTTPEndpoint("https://user:secret@push.example.org?x")
        #expect(!withQuery.description.contains("secret"))
        #expect(!withQuery.request(method: .post, path: "/v1/push", headers: HTTPHeaders(), body: []).carriesRoute)
        let broken = HTTPEndpoint("push.example.org")
        let request = broken.request(method: .post, path: "/v1/push", headers: HTTPHeaders(), body: [])
        #expect(!request.carriesRoute)
        let client = try HTTPClient()
        await #expect(throws: HTTPClientError.invalidRequest) { _ = try await client.send(request) }
        await client.shutdown()
    }

    @Test func anEndpointRequestReachesARealServerAtItsPath() async throws {
        let server = try LoopbackServer(transport: .tls) { request in .json(#"{"path":"\#(request.path)"}"#) }
        defer { server.stop() }
        let client = try HTTPClient(configuration: HTTPClientTests.trusting(server))
        let endpoint = HTTPEndpoint(server.baseURL + "/relay/")
        let response = try await client.send(endpoint.request(method: .post, path: "/v1/push", headers: HTTPHeaders(), body: [7]))
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"path":"/relay/v1/push"}"#)
        await client.shutdown()
    }
}
