import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import PushPlatform
import PushSync
import Testing

@testable import PushHTTP

/// A server that answers every connection with fixed bytes that are not HTTP, then closes:
/// the cleartext endpoint a careless proxy or a hostile host could be.
final class GarbageServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let stopped = Locked(false)
    private let thread: Thread

    init(answer: [UInt8]) throws {
        let fd = Platform.makeStreamSocket(family: AF_INET, nonBlocking: false, closeOnExec: false)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = fd
        let stopped = self.stopped
        thread = Thread {
            while !stopped.withLock({ $0 }) {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 50) > 0 else { continue }
                let client = accept(fd, nil, nil)
                guard client >= 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = recv(client, &buffer, buffer.count, 0)  // the request (or most of it)
                _ = answer.withUnsafeBytes { Platform.send(client, $0.baseAddress, $0.count) }
                shutdown(client, Int32(SHUT_WR))
                usleep(20_000)
                close(client)
            }
        }
        thread.start()
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    func stop() {
        stopped.withLock { $0 = true }
        usleep(100_000)
        close(listener)
    }
}

@Suite(.serialized) struct HostileAnswerTests {
    /// A reply that is not HTTP is the server's fault: `badResponse`, never `invalidRequest`
    /// (which blames our request, and which the retry policy treats as ours to fix).
    @Test(arguments: [
        "garbage, not HTTP at all\r\n\r\n", "\u{0}\u{1}\u{2}\u{3}", "HTTP/1.1 two hundred OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nbroken header line\r\n\r\nhello",
    ])
    func aGarbageReplyIsABadResponseNotAnInvalidRequest(_ answer: String) async throws {
        let server = try GarbageServer(answer: Array(answer.utf8))
        defer { server.stop() }
        let client = try HTTPClient(configuration: .init(requestTimeout: .seconds(5)))
        let outcome = await client.send([HTTPRequest(method: .post, url: server.baseURL + "/v1/push", body: Array("{}".utf8))]).first
        await client.shutdown()
        switch outcome?.result {
        case .success(let response)?:
            // libcurl may read a broken header line leniently; then it is an answer, not ours to blame.
            #expect(answer.contains("broken header"), "garbage read as HTTP \(response.status)")
        case .failure(let error)?:
            #expect(error.code != .invalidRequest, "\(answer.debugDescription): \(error)")
            #expect([.badResponse, .connectionLost].contains(error.code), "\(answer.debugDescription): \(error)")
            if answer.hasPrefix("garbage") { #expect(error.code == .badResponse, "\(error)") }
        case nil:
            Issue.record("no outcome")
        }
    }

    @Test(arguments: [
        ("https://relay.example.test", true), ("http://127.0.0.1:8790/hapi/", true), ("http://[::1]:1", true), ("HTTPS://R.EXAMPLE:443", true),
        ("https://relay.example.test#", false), ("https://relay.example.test?", false), ("https://u:p@relay.example.test", false),
        ("https://relay.example.test:65536", false), ("https://relay.example.test:0", false), ("http://relay.example.test", false),
        ("http://127.0.0.1.evil.test", false), ("https://relay.example.test/a b", false), ("https://relay.example.\u{1B}test", false),
    ])
    func baseURLRules(_ url: String, _ accepted: Bool) {
        let result = Result { () throws(HTTPBaseURLError) in try HTTPBaseURL(url) }
        switch result {
        case .success: #expect(accepted, "\(url) was accepted")
        case .failure(let error): #expect(!accepted, "\(url) was refused: \(error)")
        }
        #expect((try? HTTPBaseURL("http://127.0.0.1:1", cleartext: .never)) == nil)
        // Found by the `url` fuzz target: libcurl reads a third slash as nothing.
        #expect((try? HTTPBaseURL("https:///relay.example.test")) == nil)
    }

    /// Found by the `url` fuzz target: a lenient form (`http:h:pw@//…`, no `//` after the
    /// scheme) was shown with its password.
    @Test func passwordsAreRedactedInEveryFormAParserMightRead() {
        #expect(HTTPBaseURL.redactingPassword("https://u:pw@h/p@q") == "https://u:***@h/p@q")
        #expect(HTTPBaseURL.redactingPassword("http:h:pw@//localhost:0") == "http:h:***@//localhost:0")
        #expect(HTTPBaseURL.redactingPassword("http:/u:pw@h") == "http:/u:***@h")
        #expect(HTTPBaseURL.redactingPassword("https://u@h") == "https://u@h")
        // Also found by it: a scheme that is not one, then `://` and user info.
        #expect(HTTPBaseURL.redactingPassword("h0p:ts://h:9\u{FFFD}49@") == "h0p:ts://h:***@")
        #expect(HTTPBaseURL.redactingPassword("x:y://a:b@c/d://e:f@g") == "x:y://a:***@c/d://e:***@g")
        #expect(HTTPBaseURL.redactingPassword("https://h\\u:pw@x") == "https://h\\u:***@x")
        #expect(HTTPBaseURL.redactingPassword("https://h/a:b@c") == "https://h/a:b@c")
        #expect(!HTTPBaseURL.hasPassword("https://relay.example.test:8443/x"))
    }

    /// The redaction reads UTF-8 bytes and returns a text without `@` as it is; it answers what
    /// the reading of Unicode scalars it replaced answered, for texts of every kind of character.
    @Test func theByteReadingRedactsAsTheScalarReadingDid() {
        func byScalars(_ text: String) -> String {
            var scalars = Array(text.unicodeScalars)
            var starts = Set<Int>()
            if let separator = scalars.firstIndex(of: ":") { starts.insert(separator + 1) }
            for index in 0..<max(0, scalars.count - 2) where scalars[index] == ":" && scalars[index + 1] == "/" && scalars[index + 2] == "/" {
                starts.insert(index + 1)
            }
            for first in starts.sorted(by: >) {
                var start = first
                while start < scalars.count, scalars[start] == "/" || scalars[start] == "\\" { start += 1 }
                var end = start
                while end < scalars.count, scalars[end] != "/", scalars[end] != "?", scalars[end] != "#" { end += 1 }
                guard let at = (start..<end).last(where: { scalars[$0] == "@" }), let colon = (start..<at).first(where: { scalars[$0] == ":" }) else { continue }
                scalars.replaceSubrange((colon + 1)..<at, with: "***".unicodeScalars)
            }
            var out = String.UnicodeScalarView()
            out.append(contentsOf: scalars)
            return String(out)
        }
        let pieces = [":", "/", "\\", "@", "?", "#", "://", "a", "Z", "9", "é", "\u{212A}", "€", "\u{FFFD}", "😀", "e\u{301}", "\u{301}", " ", "%40", "\0"]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var redacted = 0
        for _ in 0..<20_000 {
            let text = (0..<next(24)).map { _ in pieces[next(pieces.count)] }.joined()
            let expected = byScalars(text)
            // Bytes, not `==`: String equality is canonical equivalence (U+212A is "K").
            #expect(Array(HTTPBaseURL.redactingPassword(text).utf8) == Array(expected.utf8), "\(text.debugDescription)")
            if expected != text { redacted += 1 }
        }
        // The cases reach the redaction, not only its way out.
        #expect(redacted > 200)
    }

    @Test func pathSegmentsAreEncoded() {
        #expect(HTTPBaseURL.pathSegment("../../evil?x=1#") == "..%2F..%2Fevil%3Fx%3D1%23")
        #expect(HTTPBaseURL.pathSegment("..") == "%2E%2E")
        #expect(HTTPBaseURL.pathSegment("my-project_1.x~") == "my-project_1.x~")
        #expect(HTTPBaseURL.pathSegment(String(repeating: "ab", count: 32)) == String(repeating: "ab", count: 32))
        #expect(HTTPBaseURL.pathSegment("é/") == "%C3%A9%2F")
    }

    /// One check for the CA file, used by configuration loading and the client alike.
    @Test func theCAFileCheckRefusesWhatTheClientCannotUse() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-ca-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data().write(to: URL(fileURLWithPath: directory + "/empty.pem"))
        try Data("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n".utf8).write(to: URL(fileURLWithPath: directory + "/fake.pem"))
        for (path, why) in [
            (directory + "/empty.pem", "is empty"), (directory + "/fake.pem", "no PEM certificate"), (directory, "is a directory"),
            ("/dev/zero", "not a regular file"), (directory + "/missing.pem", "cannot be read"),
        ] {
            #expect(throws: HTTPClientError.invalidConfiguration) { try HTTPTrustRoots.readAdditionalCAFile(path) }
            do {
                _ = try HTTPTrustRoots.readAdditionalCAFile(path)
            } catch {
                #expect(error.detail?.contains(why) == true, "\(path): \(error)")
            }
            #expect(throws: HTTPClientError.invalidConfiguration) {
                _ = try HTTPClient(configuration: .init(additionalTrustedCAFile: path))
            }
        }
    }
}
