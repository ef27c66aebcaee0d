import Foundation
import Testing

/// Only the provider layer speaks the providers' language: no other production module names an
/// APNs header, an FCM error field or a provider's reason string, so a change in what Apple or
/// Google send is made in one place and reaches the hub and the relay alike. (The loopback
/// stand-ins, which play the providers in tests, the demo and the bench, are exempt.)
@Suite struct ProviderVocabularyTests {
    /// Module directories under Sources/ that may name provider words: the layer itself and
    /// the stand-ins that answer as the providers do.
    static let exempt: Set<String> = [
        "PushProviders", "PushTestSupport", "PushLoopbackServer", "CHapiLoopback", "hapi-push-demo", "hapi-push-soak", "hapi-push-bench",
    ]

    /// Whole words (not part of a longer identifier, so `PushDeliveryReason.apnsBadDeviceToken`
    /// is fine and the string `BadDeviceToken` is not).
    static let words = [
        // APNs reasons and headers
        "Unregistered", "ExpiredToken", "BadDeviceToken", "ExpiredProviderToken", "InvalidProviderToken", "TooManyProviderTokenUpdates",
        "TooManyRequests", "DeviceTokenNotForTopic", "BadCollapseId", "BadTopic", "PayloadTooLarge", "BadCertificateEnvironment",
        // FCM error fields and codes
        "FcmError", "fieldViolations", "UNREGISTERED", "INVALID_ARGUMENT", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "THIRD_PARTY_AUTH_ERROR",
        "UNAVAILABLE", "google.rpc.BadRequest",
        // Google's OAuth answer
        "access_token", "error_description", "expires_in",
    ]
    /// Fragments that are never a word of ours: an APNs header name, FCM's `errorCode` member.
    static let fragments = ["\"apns-", "\"errorCode\"", "\"@type\""]

    @Test func noModuleButTheProviderLayerNamesAProvidersWords() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        let modules = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { !Self.exempt.contains($0) }
        #expect(modules.contains("PushTransports") && modules.contains("PushRelay") && modules.contains("PushNative"))
        var findings: [String] = []
        var scanned = 0
        for module in modules.sorted() {
            let directory = sources.appendingPathComponent(module)
            guard let files = FileManager.default.enumerator(atPath: directory.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                scanned += 1
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = Self.withoutComment(String(line))
                    for word in Self.words where Self.containsWord(code, word) {
                        findings.append("\(module)/\(file):\(number + 1) names \(word)")
                    }
                    for fragment in Self.fragments where code.contains(fragment) {
                        findings.append("\(module)/\(file):\(number + 1) names \(fragment)")
                    }
                }
            }
        }
        #expect(scanned > 50)
        #expect(findings.isEmpty, "\(findings.joined(separator: "\n"))")
    }

    /// Issue 27: each provider rule is written once. The APNs token rule's bound (512 digits)
    /// and the relay's envelope cap (3200 bytes) appear as numbers only where they are defined
    /// (the cap is the envelope's public constant, which the relay contract's
    /// `RelayProvider.maximumEnvelopeBytes` names), and no other module declares its own token
    /// rule or collapse-id cut.
    static let ruleLiterals: [(word: String, definedIn: Set<String>)] = [
        ("512", ["PushProviders/APNsDeviceToken.swift"]), ("3200", ["PushEnvelope/PushEnvelopeCipher.swift"]),
    ]
    static let ruleCopies = ["maximumAPNsTokenLength", "minimumAPNsTokenLength", "maximumCollapseIdBytes", "isWellFormedToken", "toUTF8Bytes"]

    @Test func eachProviderRuleIsWrittenOnce() throws {
        var findings: [String] = []
        try Self.scan { module, file, number, line in
            let code = Self.withoutComment(line)
            for (word, home) in Self.ruleLiterals where !home.contains("\(module)/\(file)") && Self.containsWord(code, word) {
                findings.append("\(module)/\(file):\(number) writes \(word)")
            }
            for word in Self.ruleCopies where module != "PushProviders" && Self.containsWord(code, word) {
                findings.append("\(module)/\(file):\(number) names \(word)")
            }
        }
        #expect(findings.isEmpty, "\(findings.joined(separator: "\n"))")
    }

    /// Issue 27: one client per provider. What a provider's answer obliges us to do to our own
    /// credentials (a fresh APNs provider token after `403 ExpiredProviderToken`, dropping the FCM
    /// access token after a 401) is done only by `APNsClient` and `FCMClient`, which the hub's
    /// transports and the relay's forwarders both call; no caller keeps its own copy.
    static let clientDuties: [(call: String, onlyIn: String)] = [
        ("refresh(rejected:", "PushTransports/APNsClient.swift"), ("said == .providerTokenExpired", "PushTransports/APNsClient.swift"),
        ("invalidate(", "PushTransports/FCMClient.swift"),
    ]

    @Test func onlyTheProviderClientsActOnWhatAnAnswerSaysAboutOurCredentials() throws {
        var findings: [String] = []
        var found: Set<String> = []
        try Self.scan { module, file, number, line in
            guard module != "PushProviders" else { return }
            let code = Self.withoutComment(line)
            // Declarations (`func invalidate(`) are the token managers' own.
            guard !code.contains("func ") else { return }
            for duty in Self.clientDuties where code.contains(duty.call) {
                if "\(module)/\(file)" == duty.onlyIn {
                    found.insert(duty.call)
                } else {
                    findings.append("\(module)/\(file):\(number) calls \(duty.call)")
                }
            }
        }
        #expect(found == Set(Self.clientDuties.map(\.call)), "the clients no longer do it: \(found)")
        #expect(findings.isEmpty, "\(findings.joined(separator: "\n"))")
    }

    /// Issue 27, done-when: no module but the provider layer names `ExpiredProviderToken`, not
    /// even in prose, so no other module can come to restate (and then disagree with) the
    /// fresh-token rule. The provider layer is PushProviders (the parser that reads the word)
    /// and the APNs client that acts on it (`APNsClient`, in PushTransports because it sends).
    static let providerLayerOnly: [(word: String, allowedIn: Set<String>)] = [
        ("ExpiredProviderToken", ["PushTransports/APNsClient.swift"])
    ]

    @Test func onlyTheProviderLayerNamesTheFreshTokenRuleEvenInProse() throws {
        var findings: [String] = []
        try Self.scan { module, file, number, line in
            guard module != "PushProviders" else { return }
            for (word, allowed) in Self.providerLayerOnly where !allowed.contains("\(module)/\(file)") && Self.containsWord(line, word) {
                findings.append("\(module)/\(file):\(number) names \(word)")
            }
        }
        #expect(findings.isEmpty, "\(findings.joined(separator: "\n"))")
    }

    /// Issue 27, item 1: `ProviderAnswer` only reads. What an answer means to a caller (prune,
    /// keep, retry; the relay's status and code) is a policy beside that caller
    /// (`HubAnswerPolicy`, `RelayProviderOutcome`), never in the provider layer.
    static let policyWords = ["retryable", "verdict", "Verdict", "mayRetry", "outcome", "invalidSince"]

    @Test func theProviderLayerReadsAnswersAndDecidesNothing() throws {
        var findings: [String] = []
        var policyHomes: Set<String> = []
        try Self.scan { module, file, number, line in
            if line.contains("enum HubAnswerPolicy") || line.contains("struct RelayProviderOutcome") { policyHomes.insert("\(module)/\(file)") }
            guard module == "PushProviders", file.hasSuffix("Provider.swift") || file == "ProviderAnswer.swift" else { return }
            for word in Self.policyWords where Self.containsWord(line, word) {
                findings.append("PushProviders/\(file):\(number) names \(word)")
            }
        }
        #expect(findings.isEmpty, "\(findings.joined(separator: "\n"))")
        #expect(policyHomes == ["PushTransports/HubAnswerPolicy.swift", "PushRelay/RelayProviderOutcome.swift"], "\(policyHomes.sorted())")
    }

    /// Issue 27, done-when: one send loop in Sources/. Every channel (relay, APNs, FCM, Web Push)
    /// sends through `DeliveryPipeline`: only it runs the window (a task group of workers,
    /// each a `ChunkedSend`) and
    /// makes the `ProviderCall` whose exchange does the backoff and the retries, and only
    /// `ProviderCall` performs a request. The dispatcher's one task group runs the channels'
    /// batches side by side; it sends nothing itself. Each transport builds its pipeline.
    static let sendLoopMarks: [(mark: String, onlyIn: Set<String>)] = [
        ("TaskGroup", ["PushTransports/DeliveryPipeline.swift", "PushTransports/ChunkedSend.swift", "PushNative/Dispatch/PushDispatcher.swift"]),
        ("window(", ["PushTransports/DeliveryPipeline.swift"]),
        ("ProviderCall(", ["PushTransports/DeliveryPipeline.swift"]),
        (".perform(", ["PushTransports/ProviderCall.swift"]),
    ]
    static let pipelineUsers: Set<String> = [
        "PushTransports/RelayTransport.swift", "PushTransports/APNsTransport.swift", "PushTransports/FCMTransport.swift",
        "PushTransports/WebPushTransport.swift",
    ]
    /// Modules that send pushes (the HTTP client and the relay's server loops are not send loops).
    static let sendingModules: Set<String> = ["PushTransports", "PushNative", "PushRelay"]

    @Test func everyChannelSendsThroughTheOnePipeline() throws {
        var findings: [String] = []
        var users: Set<String> = []
        try Self.scan { module, file, number, line in
            guard Self.sendingModules.contains(module) else { return }
            let code = Self.withoutComment(line)
            guard !code.contains("func ") else { return }
            let place = "\(module)/\(file)"
            for (mark, home) in Self.sendLoopMarks where !home.contains(place) && code.contains(mark) {
                findings.append("\(place):\(number) has \(mark)")
            }
            if code.contains("DeliveryPipeline(") { users.insert(place) }
        }
        #expect(findings.isEmpty, "\(findings.joined(separator: "\n"))")
        #expect(users == Self.pipelineUsers, "\(users.sorted())")
    }

    /// Issue 27 item 3: the relay contract is written once, for our relay client and our relay
    /// server alike: its error codes are string literals only in `RelayProvider.swift` (the
    /// relay's `RelayHTTPAnswer.Code` and `RelayPush.Platform` are that contract's types). Our
    /// own report vocabulary (`PushDeliveryReason`: `too_large`, `unregistered`) is another
    /// contract that happens to share two words.
    static let relayContractLiterals = [
        "\"bad_request\"", "\"unregistered\"", "\"too_large\"", "\"rate_limited\"", "\"unsupported_platform\"", "\"upstream\"",
        "\"not_found\"", "\"method_not_allowed\"",
    ]

    @Test func theRelayContractIsSpelledOnce() throws {
        var findings: [String] = []
        var home = 0
        try Self.scan { module, file, number, line in
            let code = Self.withoutComment(line)
            for literal in Self.relayContractLiterals where code.contains(literal) {
                if "\(module)/\(file)" == "PushProviders/RelayProvider.swift" {
                    home += 1
                } else if "\(module)/\(file)" != "PushProviders/PushDeliveryReason.swift" {
                    findings.append("\(module)/\(file):\(number) spells \(literal)")
                }
            }
        }
        #expect(home >= Self.relayContractLiterals.count, "RelayProvider.swift no longer defines the contract (\(home))")
        #expect(findings.isEmpty, "\(findings.joined(separator: "\n"))")
    }

    /// Calls `body` with each line (numbered from 1) of every Swift file under Sources/ outside
    /// the stand-ins, comments included.
    static func scan(_ body: (_ module: String, _ file: String, _ number: Int, _ line: String) -> Void) throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        let modules = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter {
            !Self.exempt.contains($0) || $0 == "PushProviders"
        }
        for module in modules.sorted() {
            let directory = sources.appendingPathComponent(module)
            guard let files = FileManager.default.enumerator(atPath: directory.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    body(module, file, number + 1, String(line))
                }
            }
        }
    }

    /// The code of a line: a whole-line comment is dropped, and a trailing ` // …`.
    static func withoutComment(_ line: String) -> String {
        let trimmed = line.drop { $0 == " " || $0 == "\t" }
        if trimmed.hasPrefix("//") { return "" }
        if let range = line.range(of: " // ") { return String(line[..<range.lowerBound]) }
        return line
    }

    static func containsWord(_ text: String, _ word: String) -> Bool {
        var searchStart = text.startIndex
        while let range = text.range(of: word, range: searchStart..<text.endIndex) {
            let before = range.lowerBound == text.startIndex ? nil : text[text.index(before: range.lowerBound)]
            let after = range.upperBound == text.endIndex ? nil : text[range.upperBound]
            if !isIdentifier(before), !isIdentifier(after) { return true }
            searchStart = range.upperBound
        }
        return false
    }

    static func isIdentifier(_ character: Character?) -> Bool {
        guard let character else { return false }
        return character.isLetter || character.isNumber || character == "_"
    }

    @Test func theScanFindsWhatItLooksFor() {
        #expect(Self.containsWord(#"case (410, "Unregistered"):"#, "Unregistered"))
        #expect(!Self.containsWord("reason == .apnsUnregistered", "Unregistered"))
        #expect(Self.withoutComment("    /// APNs `410 Unregistered`") == "")
        #expect(Self.withoutComment(#"let x = "BadDeviceToken" // why"#) == #"let x = "BadDeviceToken""#)
    }
}
