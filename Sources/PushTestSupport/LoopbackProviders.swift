import Foundation
import PushEnvelope
public import PushLoopbackServer

/// Stand-ins for the relay, APNs and FCM (with Google's token endpoint) on loopback over real
/// TLS, plus throwaway credentials and the environment that points a hub at them. Used by the
/// end-to-end tests and by `make demo`; everything lives in one temporary directory.
public final class LoopbackProviders: Sendable {
    public let relay: RecordingServer
    public let apns: RecordingServer
    public let fcm: RecordingServer
    public let directory: String
    /// A PEM bundle of the three stand-ins' CAs (`HAPI_PUSH_CA_FILE`).
    public let caBundlePath: String
    public let apnsKeyPath: String
    public let apnsKeys: TestKeys.KeyPair
    public let serviceAccountPath: String
    public let serviceAccountKeys: TestKeys.KeyPair

    public static let accessToken = "ya29.loopback-access-token"

    public init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hapi-providers-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        relay = try RecordingServer { _ in .json(#"{"ok":true}"#) }
        apns = try RecordingServer { _ in .json("").adding(header: "apns-id", UUID().uuidString) }
        fcm = try RecordingServer(respond: LoopbackProviders.googleResponder())
        var bundle = ""
        for server in [relay, apns, fcm] {
            if let path = server.caFile, let data = FileManager.default.contents(atPath: path) { bundle += String(decoding: data, as: UTF8.self) }
        }
        caBundlePath = directory + "/stand-in-ca.pem"
        try Data(bundle.utf8).write(to: URL(fileURLWithPath: caBundlePath))
        guard let apnsKeys = TestKeys.p256(), let serviceAccountKeys = TestKeys.rsa2048() else {
            throw LoopbackServerError(message: "OpenSSL could not generate test keys")
        }
        self.apnsKeys = apnsKeys
        self.serviceAccountKeys = serviceAccountKeys
        apnsKeyPath = directory + "/AuthKey_DEMO123456.p8"
        try Data(apnsKeys.privateKeyPEM.utf8).write(to: URL(fileURLWithPath: apnsKeyPath))
        serviceAccountPath = directory + "/service-account.json"
        let account = JSONValue.object([
            "type": "service_account", "project_id": "hapi-demo", "client_email": "push@hapi-demo.iam.gserviceaccount.com",
            "private_key": .string(serviceAccountKeys.privateKeyPEM), "token_uri": .string(fcm.baseURL + "/token"),
        ])
        try Data(account.canonicalBytes).write(to: URL(fileURLWithPath: serviceAccountPath))
    }

    /// Answers `/token` with an access token and everything else as FCM accepting the message.
    public static func googleResponder(
        send: @escaping RecordingServer.Responder = { _ in .json(#"{"name":"projects/hapi-demo/messages/0:1"}"#) }
    ) -> RecordingServer.Responder {
        { request in
            request.path == "/token"
                ? .json(#"{"access_token":"\#(accessToken)","expires_in":3599,"token_type":"Bearer"}"#) : send(request)
        }
    }

    /// The environment of a hub using these stand-ins, with the given modes.
    public func environment(iosMode: String, androidMode: String, dataDirectory: String) -> [String: String] {
        [
            "HOME": dataDirectory, "HAPI_HOME": dataDirectory,
            "HAPI_IOS_PUSH": iosMode, "HAPI_ANDROID_PUSH": androidMode,
            "HAPI_PUSH_RELAY_URL": relay.baseURL, "HAPI_APNS_ENDPOINT": apns.baseURL, "HAPI_FCM_ENDPOINT": fcm.baseURL,
            "HAPI_PUSH_CA_FILE": caBundlePath,
            "APNS_KEY_P8_PATH": apnsKeyPath, "APNS_KEY_ID": "DEMO123456", "APNS_TEAM_ID": "TEAM123456", "APNS_BUNDLE_ID": "run.hapi.app",
            "FCM_SERVICE_ACCOUNT_PATH": serviceAccountPath,
        ]
    }

    public func clearRequests() {
        for server in [relay, apns, fcm] { server.clearRequests() }
    }

    public func stop() {
        for server in [relay, apns, fcm] { server.stop() }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
