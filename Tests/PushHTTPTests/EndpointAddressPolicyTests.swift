#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushLoopbackServer
import PushTestSupport
import Testing

@testable import PushHTTP

/// Issue 21 item 6: no server-side request forgery through a Web Push endpoint. The classifier,
/// and the client refusing at connect time on the very address it would connect to.
@Suite struct EndpointAddressPolicyTests {
    static let refused: [(String, EndpointAddressPolicy.Refusal)] = [
        ("127.0.0.1", .loopback), ("127.255.0.9", .loopback), ("::1", .loopback),
        ("10.1.2.3", .privateNetwork), ("172.16.0.1", .privateNetwork), ("172.31.255.255", .privateNetwork), ("192.168.1.1", .privateNetwork),
        ("100.64.0.1", .privateNetwork),
        ("169.254.169.254", .linkLocal), ("fe80::1", .linkLocal),
        ("fc00::1", .uniqueLocal), ("fd12:3456::1", .uniqueLocal),
        ("224.0.0.1", .multicast), ("239.1.1.1", .multicast), ("ff02::1", .multicast),
        ("0.0.0.0", .unspecified), ("::", .unspecified), ("255.255.255.255", .reserved),
        ("::ffff:127.0.0.1", .loopback), ("::ffff:10.0.0.1", .privateNetwork), ("::ffff:169.254.169.254", .linkLocal),
        ("64:ff9b::7f00:1", .loopback), ("2002:7f00:1::", .loopback), ("2001:db8::1", .reserved),
    ]

    @Test(arguments: refused) func refusesEveryPrivateRange(_ address: String, _ refusal: EndpointAddressPolicy.Refusal) {
        #expect(EndpointAddressPolicy.refusal(address: address) == refusal)
    }

    @Test(arguments: ["8.8.8.8", "142.250.74.110", "172.32.0.1", "100.128.0.1", "2607:f8b0:4004:800::200a", "::ffff:8.8.8.8", "192.0.1.1"])
    func allowsPublicAddresses(_ address: String) {
        #expect(EndpointAddressPolicy.refusal(address: address) == nil)
    }

    static func client(_ server: LoopbackServer, policy: EndpointAddressPolicy) throws -> HTTPClient {
        var configuration = HTTPClient.Configuration(additionalTrustedCAFile: server.caCertificatePath)
        configuration.addressPolicy = policy
        return try HTTPClient(configuration: configuration)
    }

    @Test func theClientRefusesLoopbackByNumberByNameAndIPv4MappedOverHTTP2() async throws {
        let server = try LoopbackServer { _ in .init(status: 201) }
        defer { server.stop() }
        let client = try Self.client(server, policy: .publicOnly)
        defer { Task { await client.shutdown() } }
        // "localhost" is a name that resolves to 127.0.0.1 (and ::1).
        for base in [server.baseURL, server.localhostBaseURL, "https://[::ffff:127.0.0.1]:\(server.port)"] {
            await #expect(throws: HTTPClientError.addressNotAllowed, "\(base)") {
                _ = try await client.send(HTTPRequest(method: .post, url: base + "/push/x", body: [1]))
            }
        }
        #expect(server.connectionsAccepted == 0)
        let allowing = try Self.client(server, policy: .any)
        let response = try await allowing.send(HTTPRequest(method: .post, url: server.localhostBaseURL + "/push/x", body: [1]))
        #expect(response.status == 201)
        await allowing.shutdown()
    }

    @Test func theHTTP1PathRefusesToo() async throws {
        // Cleartext goes through libcurl, which resolves on its own: its socket callback judges.
        let server = try LoopbackServer(transport: .cleartext) { _ in .init(status: 201) }
        defer { server.stop() }
        let client = try Self.client(server, policy: .publicOnly)
        await #expect(throws: HTTPClientError.self) {
            _ = try await client.send(HTTPRequest(method: .post, url: server.localhostBaseURL + "/push/x", body: [1]))
        }
        #expect(server.connectionsAccepted == 0)
        await client.shutdown()
    }
}
