import Foundation
import PushNative
import Testing

// The README's embedding example, verbatim: it must compile here, and the test below checks
// that the README still shows exactly this code.
// README-EXAMPLE-BEGIN
func handleAgentReady(body: [UInt8]) async throws {
    let push = try await NativePush.start()  // HAPI_*/APNS_*/FCM_* env > ~/.hapi/settings.json > defaults
    let answer = await push.register(namespace: "default", body: body)  // POST /api/devices/register
    print(answer.status, answer.body)  // 200 {"ok":true}, or 400 naming every bad field
    // The session as the hub stores it (metadata, agentState) and its last messages, worded as
    // the JavaScript hub words them: here "Ready for input" / "Claude is waiting in hapi".
    let session = PushSession(id: "s1", metadata: ["flavor": "claude", "name": "hapi"])
    let report = try await push.dispatch(PushNotificationComposer.ready(for: session, messages: []), namespace: "default")
    if !report.suppressWebPush { /* no native device got it: send the Web Push fallback */ }
    await push.shutdown()
}
// README-EXAMPLE-END

// README-HUB-EXAMPLE-BEGIN
/// The JavaScript hub's notifications and timing: feed the scheduler the hub's session and
/// message events; it composes and delivers when the JavaScript hub would.
func makeScheduler(
    push: NativePush, namespace: String, session: @escaping @Sendable (String) async -> PushSession?,
    recentMessages: @escaping @Sendable (String) async -> [PushJSONValue]
) -> PushNotificationScheduler<ContinuousClock> {
    PushNotificationScheduler(session: session, recentMessages: recentMessages) { payload in
        let report = try? await push.dispatch(payload, namespace: namespace)
        if report?.suppressWebPush != true { /* send the Web Push fallback */ }
    }
}
// On session-added/updated:  await scheduler.sessionUpdated(PushSession(id: id, active: active, metadata: metadata, agentState: agentState))
// On session-removed:        await scheduler.sessionRemoved(id: id)
// On message-received:       await scheduler.messageReceived(sessionId: id, content: content)
// README-HUB-EXAMPLE-END

@Suite struct ReadmeExampleTests {
    @Test func readmeShowsTheCompiledExample() throws {
        let here = URL(fileURLWithPath: #filePath)
        let root = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let source = try String(contentsOf: here, encoding: .utf8)
        let begin = try #require(source.range(of: "// README-EXAMPLE-BEGIN\n"))
        let end = try #require(source.range(of: "// README-EXAMPLE-END"))
        let example = String(source[begin.upperBound..<end.lowerBound])
        #expect(readme.contains("```swift\nimport PushNative\n\n" + example + "```"))
        let hubBegin = try #require(source.range(of: "// README-HUB-EXAMPLE-BEGIN\n"))
        let hubEnd = try #require(source.range(of: "// README-HUB-EXAMPLE-END"))
        #expect(readme.contains("```swift\n" + String(source[hubBegin.upperBound..<hubEnd.lowerBound]) + "```"))
    }
}
