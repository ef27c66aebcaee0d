import PushEnvelope
import PushHTTP
import PushLoopbackServer
import PushSync
import PushTestSupport
import Testing

@testable import PushRelay
@testable import PushTransports

/// What reaches APNs and FCM, exactly, over real HTTP/2 + TLS to the loopback stand-ins.
@Suite struct RelayForwardingTests {
    @Test func iosIsForwardedWithTheSpecsHeadersAndWrappedBody() async throws {
        let relay = try RelayFixture()
        let response = try await relay.push(iosPush())
        await relay.stop()
        #expect(response.status == 200)
        #expect(response.text == #"{"ok":true}"#)
        let request = try #require(relay.apnsRequests.first)
        #expect(relay.apnsRequests.count == 1)
        #expect(request.httpVersion == 2)
        #expect(request.method == "POST")
        // Lowercased before use.
        #expect(request.path == "/3/device/" + mixedCaseToken.lowercased())
        let headers = request.regularHeaders
        #expect(headers["apns-topic"] == "run.hapi.app")
        #expect(headers["apns-push-type"] == "alert")
        #expect(headers["apns-priority"] == "10")
        #expect(headers["apns-expiration"] == "0")
        #expect(headers["apns-collapse-id"] == nil)
        #expect(headers["content-type"] == "application/json")
        #expect(
            request.bodyString
                == #"{"aps":{"mutable-content":1,"alert":{"title":"HAPI","body":"New activity"},"sound":"default"},"hapi":{"v":1,"e":"\#(sampleEnvelope)"}}"#
        )
        // The ES256 provider token verifies with the key's public half.
        let authorization = try #require(headers["authorization"])
        #expect(authorization.hasPrefix("bearer "))
        let verified = try #require(JWTVerifier.verify(String(authorization.dropFirst(7)), publicKeyPEM: relay.providers.apnsKeys.publicKeyPEM))
        #expect(verified.header == ["alg": "ES256", "kid": "DEMO123456"])
        #expect(verified.claims["iss"] == "TEAM123456")
    }

    @Test func priorityFiveAndTheCollapseIdPassThrough() async throws {
        let relay = try RelayFixture()
        _ = try await relay.push(iosPush(extra: ["priority": 5, "collapseId": "session-42"]))
        // Cut to 64 bytes between code points.
        _ = try await relay.push(iosPush(extra: ["collapseId": .string("permission-request-" + String(repeating: "é", count: 40))]))
        // Empty: no header at all.
        _ = try await relay.push(iosPush(extra: ["collapseId": ""]))
        await relay.stop()
        let requests = relay.apnsRequests
        try #require(requests.count == 3)
        #expect(requests[0].regularHeaders["apns-priority"] == "5")
        #expect(requests[0].regularHeaders["apns-collapse-id"] == "session-42")
        let cut = try #require(requests[1].regularHeaders["apns-collapse-id"])
        #expect(cut == "permission-request-" + String(repeating: "é", count: 22))
        #expect(cut.utf8.count == 63)
        #expect(requests[1].regularHeaders["apns-priority"] == "10")
        #expect(requests[2].regularHeaders["apns-collapse-id"] == nil)
    }

    @Test func androidIsForwardedAsTheSpecsDataOnlyMessage() async throws {
        let relay = try RelayFixture()
        let high = try await relay.push(androidPush(token: "Case:Sensitive-Token", extra: ["collapseId": "ignored-on-android"]))
        let normal = try await relay.push(androidPush(token: "Case:Sensitive-Token", extra: ["priority": 5]))
        await relay.stop()
        #expect(high.status == 200)
        #expect(normal.status == 200)
        let sends = relay.fcmSends
        try #require(sends.count == 2)
        #expect(sends[0].method == "POST")
        #expect(sends[0].path == "/v1/projects/hapi-demo/messages:send")
        #expect(sends[0].httpVersion == 2)
        #expect(sends[0].regularHeaders["authorization"] == "Bearer " + LoopbackProviders.accessToken)
        #expect(sends[0].regularHeaders["content-type"] == "application/json")
        #expect(
            sends[0].bodyString
                == #"{"message":{"token":"Case:Sensitive-Token","data":{"hapi_v":"1","hapi_e":"\#(sampleEnvelope)"},"android":{"priority":"HIGH","restricted_package_name":"run.hapi.companion"}}}"#
        )
        #expect(sends[1].bodyString.contains(#""priority":"NORMAL""#))
        // One OAuth exchange, shared: the assertion's audience is the account's token_uri.
        let exchanges = relay.providers.fcm.requests.filter { $0.path == "/token" }
        #expect(exchanges.count == 1)
        let form = try #require(exchanges.first?.bodyString)
        #expect(form.hasPrefix("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion="))
        let assertion = String(form.split(separator: "=").last ?? "")
        let verified = try #require(JWTVerifier.verify(assertion, publicKeyPEM: relay.providers.serviceAccountKeys.publicKeyPEM))
        #expect(verified.claims["aud"]?.stringValue == relay.providers.fcm.baseURL + "/token")
        #expect(verified.claims["scope"] == "https://www.googleapis.com/auth/firebase.messaging")
    }

    @Test func aConfiguredPackageNameRestrictsTheMessage() async throws {
        let relay = try RelayFixture { configuration in configuration.fcm?.packageName = "run.hapi.companion.debug" }
        _ = try await relay.push(androidPush())
        await relay.stop()
        #expect(relay.fcmSends.first?.bodyString.contains(#""restricted_package_name":"run.hapi.companion.debug""#) == true)
    }

    @Test func aPlatformWithoutAProviderIs501() async throws {
        let relay = try RelayFixture(apns: false)
        let ios = try await relay.push(iosPush())
        let android = try await relay.push(androidPush())
        await relay.stop()
        #expect(ios.status == 501)
        #expect(ios.json?["code"] == "unsupported_platform")
        #expect(ios.json?["ok"] == false)
        #expect(android.status == 200)
        #expect(relay.apnsRequests.isEmpty)
    }

    @Test func expiredProviderTokenIsRetriedOnceWithAFreshToken() async throws {
        let relay = try RelayFixture()
        let first = Locked<String?>(nil)
        relay.providers.apns.respond { request in
            let authorization = request.header("authorization") ?? ""
            let stale = first.withLock { first -> Bool in
                if first == nil { first = authorization }
                return first == authorization
            }
            return stale ? .text(status: 403, #"{"reason":"ExpiredProviderToken"}"#) : .json("")
        }
        let retried = try await relay.push(iosPush())
        #expect(retried.status == 200)
        let requests = relay.apnsRequests
        #expect(requests.count == 2)
        #expect(requests.count == 2 && requests[0].header("authorization") != requests[1].header("authorization"))
        // Refused again: exactly one retry, then 502.
        relay.providers.apns.clearRequests()
        relay.providers.apns.respond { _ in .text(status: 403, #"{"reason":"ExpiredProviderToken"}"#) }
        let refused = try await relay.push(iosPush(token: String(repeating: "cd", count: 32)))
        await relay.stop()
        #expect(refused.status == 502)
        #expect(refused.json?["code"] == "upstream")
        #expect(relay.apnsRequests.count == 2)
    }

    @Test func afterARetryTheNextPushesCarryTheFreshTokenFromTheStart() async throws {
        // Pushes right after one another reuse the token at hand without asking for it again;
        // once Apple refused it, that is the fresh one, not the refused one.
        let relay = try RelayFixture()
        let first = Locked<String?>(nil)
        relay.providers.apns.respond { request in
            let authorization = request.header("authorization") ?? ""
            let stale = first.withLock { first -> Bool in
                if first == nil { first = authorization }
                return first == authorization
            }
            return stale ? .text(status: 403, #"{"reason":"ExpiredProviderToken"}"#) : .json("")
        }
        #expect(try await relay.push(iosPush()).status == 200)
        #expect(relay.apnsRequests.count == 2)
        for index in 0..<5 {
            let token = String(repeating: "e\(index)", count: 32)
            #expect(try await relay.push(iosPush(token: token)).status == 200)
        }
        await relay.stop()
        #expect(relay.apnsRequests.count == 7)
    }

    @Test func aProviderThatNeverAnswersIs502WhileOthersAreAnswered() async throws {
        let timeout = Duration.milliseconds(1500)
        let relay = try RelayFixture { $0.providerTimeout = timeout }
        let silent = String(repeating: "de", count: 32)
        relay.providers.apns.respond { request in
            request.path.hasSuffix(silent) ? .action(.neverRespond) : .json("").delayed(milliseconds: 20)
        }
        let clock = ContinuousClock()
        let start = clock.now
        async let stuck = relay.push(iosPush(token: silent))
        try await Task.sleep(for: .milliseconds(100))
        // While one push waits for an answer that never comes, others are answered.
        var answered: [Int] = []
        for i in 0..<5 {
            let response = try await relay.push(iosPush(token: String(repeating: "0", count: 62) + "0\(i)"))
            answered.append(response.status)
            #expect(clock.now - start < timeout, "push \(i) waited for the stuck one")
        }
        let result = try await stuck
        let elapsed = clock.now - start
        await relay.stop()
        #expect(answered == [200, 200, 200, 200, 200])
        #expect(result.status == 502)
        #expect(result.json?["code"] == "upstream")
        #expect(elapsed >= timeout)
        #expect(elapsed < timeout * 3)
        #expect(relay.log.pushLines.contains { $0.contains("outcome=upstream") && $0.contains("reason=timeout") })
    }

    @Test func anUnreachableProviderIs502() async throws {
        let relay = try RelayFixture()
        relay.providers.apns.stop()
        relay.providers.fcm.stop()
        let ios = try await relay.push(iosPush())
        let android = try await relay.push(androidPush())
        await relay.stop()
        #expect(ios.status == 502)
        #expect(android.status == 502)
        #expect(ios.json?["code"] == "upstream")
        #expect(android.json?["code"] == "upstream")
    }

    @Test func aStreamTheProviderRefusedIsSentOnceMoreWithinThePush() async throws {
        // REFUSED_STREAM proves Apple did not act on it, and the HTTP client resends nothing:
        // the relay's exchange sends it once more, and only once.
        let relay = try RelayFixture()
        let seen = Locked(0)
        relay.providers.apns.respond { _ in
            let n = seen.withLock {
                $0 += 1
                return $0
            }
            return n == 1 ? .action(.resetStream(errorCode: 7)) : .json("")
        }
        let resent = try await relay.push(iosPush())
        #expect(resent.status == 200)
        #expect(seen.withLock { $0 } == 2)
        relay.providers.apns.respond { _ in
            seen.withLock { $0 += 1 }
            return .action(.resetStream(errorCode: 7))
        }
        let refused = try await relay.push(iosPush(token: String(repeating: "cd", count: 32)))
        await relay.stop()
        #expect(refused.status == 502)
        #expect(refused.json?["code"] == "upstream")
        #expect(seen.withLock { $0 } == 4, "refused twice: no third try")
    }

    @Test func providersNeverAllowMoreThanOneRequestPerPush() async throws {
        // No queue and no retry beyond the token refresh: a 503 is answered 502 after one try.
        let relay = try RelayFixture()
        relay.providers.apns.respond { _ in .text(status: 503, #"{"reason":"ServiceUnavailable"}"#) }
        relay.providers.fcm.respond(LoopbackProviders.googleResponder { _ in .json(status: 503, #"{"error":{"code":503,"status":"UNAVAILABLE"}}"#) })
        let ios = try await relay.push(iosPush())
        let android = try await relay.push(androidPush())
        await relay.stop()
        #expect(ios.status == 502)
        #expect(android.status == 502)
        #expect(relay.apnsRequests.count == 1)
        #expect(relay.fcmSends.count == 1)
    }
}

@Suite struct RelayRequestBodyTests {
    @Test func theFCMBodyEscapesTheTokenOnly() throws {
        let body = FCMProvider.body(token: #"a"b\c"#, envelope: "QQ==", highPriority: true, packageName: "run.hapi.companion")
        let parsed = try JSONParser.parse(body)
        #expect(parsed["message"]?["token"]?.stringValue == #"a"b\c"#)
        #expect(parsed["message"]?["data"]?["hapi_e"] == "QQ==")
        #expect(parsed["message"]?["android"]?["priority"] == "HIGH")
        #expect(parsed["message"]?["notification"] == nil)
        #expect(parsed["message"]?["android"]?["collapse_key"] == nil)
    }
}
