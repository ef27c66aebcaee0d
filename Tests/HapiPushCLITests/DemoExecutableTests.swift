import Foundation
import Testing

/// Issue 12, item 6: the demo is its own executable; `hapi-push demo` still runs it, and the
/// operator's `hapi-push` carries no test code (no loopback server, no test keys).
@Suite struct DemoExecutableTests {
    @Test func hapiPushDemoHandsOverToTheDemoExecutable() throws {
        let result = try CLI.run(["demo"], timeout: .seconds(120))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("The golden envelope"))
        #expect(result.stdout.contains("The Web Push decision"))
    }

    @Test func theDemoRunsOnItsOwn() throws {
        let demo = CLI.executable.deletingLastPathComponent().appendingPathComponent("hapi-push-demo")
        let result = try CLI.run([], timeout: .seconds(120), executable: demo)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("A 410 from the provider prunes exactly that device"))
        // Issue 21: the browser receives, decrypts and prints the fallback; none once a native device has it.
        #expect(result.stdout.contains("no native device in namespace web → Web Push decision: sent"))
        #expect(result.stdout.contains(#"the browser decrypts: {"title":"Ready for input","body":"Claude is waiting in hapi","tag":"ready-web-session""#))
        #expect(result.stdout.contains("Web Push decision: native_sent; Web Push requests: 0"))
        #expect(try CLI.run(["--extra"], executable: demo).status == 2)
    }

    /// Swift symbols carry their module's name: none of the test modules' names (nor the test
    /// key shim's functions) appear in the `hapi-push` binary.
    @Test func hapiPushLinksNoTestCode() throws {
        let binary = try Data(contentsOf: CLI.executable)
        for name in ["PushLoopbackServer", "PushTestSupport", "hapi_test_", "CHapiLoopback"] {
            #expect(binary.range(of: Data(name.utf8)) == nil, "hapi-push contains \(name)")
        }
        let demo = try Data(contentsOf: CLI.executable.deletingLastPathComponent().appendingPathComponent("hapi-push-demo"))
        #expect(demo.range(of: Data("PushLoopbackServer".utf8)) != nil, "the check above would not see a linked module")
    }
}
