package import PushHTTP
package import PushEnvelope

/// Direct FCM HTTP v1 with the operator's service account: data-only messages carrying the
/// contract's payload in plaintext (the private direct path), to phones and watches.
package struct FCMTransport: PushTransport {
    package var name: PushTransportName { .fcm }
    package let endpoint: String
    package let projectId: String
    package let accessTokens: FCMAccessTokenProvider
    let call: ProviderCall
    let logger: any PushLogger
    let concurrency: Int

    package init(
        endpoint: String = "https://fcm.googleapis.com", account: FCMServiceAccount, client: HTTPClient,
        accessTokens: FCMAccessTokenProvider? = nil, retryPolicy: PushRetryPolicy = .none, logger: any PushLogger = SilentPushLogger(),
        concurrency: Int = 64, metrics: (any PushMetricsFactory)? = nil
    ) {
        self.endpoint = endpoint.droppingTrailingSlashes
        self.projectId = account.projectId
        self.accessTokens = accessTokens ?? FCMAccessTokenProvider(account: account, client: client)
        self.call = ProviderCall(
            client: client, policy: retryPolicy, backoff: EndpointBackoff(), inFlight: ProviderCall.inFlightMeter(metrics, transport: .fcm))
        self.logger = logger
        self.concurrency = concurrency
    }

    package func send(_ deliveries: [PushDelivery]) async -> [PushResult] {
        guard !deliveries.isEmpty else { return [] }
        // One exchange for the batch: if Google refuses the service account, every device of
        // the batch fails with that one reason, and the exchange is not repeated per device.
        let accessToken: String
        do {
            accessToken = try await accessTokens.token()
        } catch {
            return deliveries.map { delivery in
                let result = PushResult(outcome: .failed, reason: .oauth, detail: error.message, status: error.status, attempts: 0)
                logger.log(delivery, transport: name, result)
                return result
            }
        }
        let url = Self.sendURL(endpoint: endpoint, projectId: projectId)
        let headers: HTTPHeaders = ["authorization": "Bearer " + accessToken, "content-type": "application/json"]
        return await inChunks(deliveries, concurrency: concurrency) { [call, logger, name, accessTokens] chunk in
            let results = await call.perform(chunk, secrets: [accessToken], prepare: { Self.prepare($0, url: url, headers: headers) }) {
                response in
                ProviderCall.Verdict(classification: Self.classify(status: response.status, body: response.body))
            }
            if results.contains(where: { $0.status == 401 }) { await accessTokens.invalidate(accessToken) }
            for (delivery, result) in zip(chunk, results) { logger.log(delivery, transport: name, result) }
            return results
        }
    }

    func send(_ delivery: PushDelivery, accessToken: String) async -> PushResult {
        let url = Self.sendURL(endpoint: endpoint, projectId: projectId)
        let headers: HTTPHeaders = ["authorization": "Bearer " + accessToken, "content-type": "application/json"]
        return await call.perform([delivery], secrets: [accessToken], prepare: { Self.prepare($0, url: url, headers: headers) }) {
            response in
            ProviderCall.Verdict(classification: Self.classify(status: response.status, body: response.body))
        }.first ?? .refused(.noResult)
    }

    /// `{endpoint}/v1/projects/<project_id>/messages:send`, the project id percent-encoded: it
    /// comes from the service-account file and must never change where the bearer token goes.
    static func sendURL(endpoint: String, projectId: String) -> String {
        endpoint + "/v1/projects/" + HTTPBaseURL.pathSegment(projectId) + "/messages:send"
    }

    static func prepare(_ delivery: PushDelivery, url: String, headers: HTTPHeaders) -> ProviderCall.Prepared {
        guard case .plaintext(let payload) = delivery.content else { return .refuse(.refused(.fcmRequiresPlaintext)) }
        guard delivery.target != .ios else { return .refuse(.refused(.fcmRequiresAndroidToken)) }
        return .send(
            HTTPRequest(
                method: .post, url: url, headers: headers,
                body: body(token: delivery.token, payload: payload, target: delivery.target, priority: delivery.priority)))
    }

    /// A data-only message: every value a string, no `notification`, no `collapse_key`.
    /// Wear adds `direct_boot_ok`, so a watch that rebooted can still show it. Written in the
    /// JavaScript hub's byte order: `message` as `token`, `data`, `android`; `data` in the
    /// payload's insertion order (`PushNotificationPayload.jsonValue`).
    package static func body(token: String, payload: PushNotificationPayload, target: PushDelivery.Target, priority: PushPriority) -> [UInt8] {
        var android: [(key: String, value: JSONValue)] = [(key: "priority", value: .string(priority == .high ? "HIGH" : "NORMAL"))]
        if target == .wear { android.append((key: "direct_boot_ok", value: true)) }
        let message: JSONValue = ["message": ["token": .string(token), "data": payload.jsonValue, "android": .object(android)]]
        return CanonicalJSON.javaScriptBytes(message)
    }

    /// 2xx → sent. Invalid only on explicit token death: 404 `UNREGISTERED`, or 400
    /// `INVALID_ARGUMENT` about the token (a field violation on `message.token`, or Google's
    /// "not a valid FCM registration token"). Any other `INVALID_ARGUMENT` is about our message:
    /// failed. A generic 404 (wrong project), 401/403, 429, 5xx → failed; 429, 500 and 503
    /// (`UNAVAILABLE`, `INTERNAL`, `QUOTA_EXCEEDED`) may be retried by a policy.
    package static func classify(status: Int, body: [UInt8]) -> Classification {
        let error = ProviderCall.jsonObject(body)?["error"]
        let googleStatus = error?["status"]?.stringValue
        let message = error?["message"]?.stringValue ?? ""
        var fcmErrorCode: String?
        var tokenFieldViolation = false
        for detail in error?["details"]?.arrayValue ?? [] {
            let type = detail["@type"]?.stringValue ?? ""
            if type.hasSuffix("google.firebase.fcm.v1.FcmError"), let code = detail["errorCode"]?.stringValue {
                fcmErrorCode = code
            }
            if type.hasSuffix("google.rpc.BadRequest") {
                for violation in detail["fieldViolations"]?.arrayValue ?? [] where violation["field"]?.stringValue == "message.token" {
                    tokenFieldViolation = true
                }
            }
        }
        let reason = (fcmErrorCode ?? googleStatus).map { PushDeliveryReason(rawValue: ProviderCall.code($0)) } ?? .http(status)
        let detail = message.isEmpty ? nil : ProviderCall.excerpt(message)
        switch status {
        case 200...299:
            return Classification(outcome: .sent, reason: nil)
        case 404 where fcmErrorCode == "UNREGISTERED" || googleStatus == "UNREGISTERED":
            return Classification(outcome: .invalid, reason: .fcmUnregistered)
        case 400 where (fcmErrorCode == "INVALID_ARGUMENT" || googleStatus == "INVALID_ARGUMENT")
            && (tokenFieldViolation || message.contains("not a valid FCM registration token")):
            return Classification(outcome: .invalid, reason: .fcmInvalidArgument, detail: "invalid registration token")
        case 429, 500, 503:
            return Classification(outcome: .failed, reason: reason, detail: detail, retryable: true)
        default:
            return Classification(outcome: .failed, reason: reason, detail: detail)
        }
    }
}
