import CHapiCurl
import Synchronization

/// The one HTTP client every transport (relay, APNs, FCM) sends through: libcurl's multi
/// interface on one dedicated thread.
///
/// - HTTP/2 over TLS, negotiated by ALPN, with multiplexing: concurrent requests to one
///   authority share one connection (libcurl waits for the first connection's ALPN result
///   rather than opening one per request), and connections are reused across calls. Requests
///   beyond `maximumConnectionsPerHost` × the stream limit wait, in order. `http://` URLs
///   speak HTTP/1.1, or h2c with `forceHTTP2PriorKnowledge`.
/// - TLS peer and host-name verification are always on. The system trust store is used, plus
///   `Configuration.additionalTrustedCAFile` if set.
/// - Every failure is a typed `HTTPClientError`; a refused stream (HTTP/2 REFUSED_STREAM, or
///   GOAWAY before the request was processed) is retried once automatically, as libcurl also
///   does internally.
/// - Cancelling the calling task aborts the transfer promptly with `.cancelled`.
///
/// Call `shutdown()` when done: it fails what is pending with `.shutdown` and waits until the
/// thread has freed every handle. A client released without `shutdown()` still shuts down on
/// its own (without waiting), but resources are then freed at an unspecified later moment.
package final class HTTPClient: Sendable {
    /// What the client has done so far.
    package struct Statistics: Sendable, Hashable {
        /// Requests whose first attempt was handed to libcurl.
        package var requestsSent: Int
        /// Additional attempts after a refused stream (libcurl's own internal retries, which
        /// happen before a refusal surfaces here, are not counted).
        package var retriesPerformed: Int
    }

    package let configuration: Configuration
    let loop: CurlMultiLoop

    /// Starts the client's thread.
    ///
    /// - Throws: `HTTPClientError.invalidConfiguration` for a non-positive timeout or limit,
    ///   an unreadable or non-PEM `additionalTrustedCAFile`, or a libcurl older than 7.85.
    package init(configuration: Configuration = Configuration()) throws(HTTPClientError) {
        let configuration = try configuration.validated()
        self.configuration = configuration
        let trustStore: CurlTrustStore? =
            if let path = configuration.additionalTrustedCAFile {
                try CurlTrustStore(additionalCAFile: path)
            } else {
                nil
            }
        loop = try CurlMultiLoop.start(
            settings: CurlMultiLoop.Settings(
                connectTimeout: configuration.connectTimeout,
                maximumResponseBodyBytes: configuration.maximumResponseBodyBytes,
                forceHTTP2PriorKnowledge: configuration.forceHTTP2PriorKnowledge,
                trustStore: trustStore),
            maximumConnectionsPerHost: configuration.maximumConnectionsPerHost,
            maximumConcurrentStreams: configuration.maximumConcurrentStreamsPerConnection,
            maximumCachedConnections: configuration.maximumCachedConnections)
    }

    deinit {
        // Never waits: the thread fails nothing (no send can be in flight once the client is
        // released, since send holds it) and frees everything as it exits.
        loop.beginShutdown()
    }

    /// Sends `request` and returns the complete response. Non-2xx statuses are responses, not
    /// errors.
    ///
    /// - Throws: `HTTPClientError`; see its static members.
    package func send(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse {
        let isHTTPS = try Self.validate(request)
        let transfer = HTTPTransfer(
            request: request, isHTTPS: isHTTPS, timeout: request.timeout ?? configuration.requestTimeout)
        let loop = self.loop
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: HTTPTransfer.Continuation) in
                transfer.start(continuation, on: loop)
            }
        } onCancel: {
            transfer.cancel(on: loop)
        }
        return try result.get()
    }

    /// Fails pending and in-flight requests with `.shutdown`, stops the thread and frees every
    /// libcurl handle; returns once that is done. Idempotent; later `send`s fail with `.shutdown`.
    package func shutdown() async {
        await loop.shutdown()
    }

    package var statistics: Statistics {
        Statistics(
            requestsSent: loop.counters.requestsSent.load(ordering: .relaxed),
            retriesPerformed: loop.counters.retriesPerformed.load(ordering: .relaxed))
    }

    /// Easy handles created and not yet freed (for leak tests).
    var liveEasyHandleCount: Int { loop.counters.liveEasyHandles.load(ordering: .relaxed) }

    // MARK: - Validation

    /// Checks what libcurl would misread or what would break the framing; returns whether the
    /// URL is https.
    static func validate(_ request: HTTPRequest) throws(HTTPClientError) -> Bool {
        guard isToken(request.method.rawValue) else {
            throw HTTPClientError(.invalidRequest, detail: "the method is not an HTTP token")
        }
        for field in request.headers {
            guard isToken(field.name) else {
                throw HTTPClientError(.invalidRequest, detail: "a header name is not an HTTP token")
            }
            // The value is never quoted: it may be a credential.
            guard !field.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) else {
                throw HTTPClientError(.invalidRequest, detail: "header \(field.name) has a CR, LF or NUL in its value")
            }
        }
        return try validateURL(request.url)
    }

    private static func validateURL(_ url: String) throws(HTTPClientError) -> Bool {
        guard !url.utf8.contains(0) else {
            throw HTTPClientError(.invalidRequest, detail: "the URL contains a NUL byte")
        }
        guard let handle = curl_url() else {
            throw HTTPClientError(.other, detail: "curl_url failed (out of memory)")
        }
        defer { curl_url_cleanup(handle) }
        let rc = curl_url_set(handle, CURLUPART_URL, url, 0)
        guard rc == CURLUE_OK else {
            let reason = curl_url_strerror(rc).map { String(cString: $0) } ?? "malformed"
            throw HTTPClientError(.invalidRequest, detail: "the URL is not a valid absolute URL (\(reason))")
        }
        func part(_ which: CURLUPart) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard curl_url_get(handle, which, &value, 0) == CURLUE_OK, let value else { return nil }
            defer { curl_free(value) }
            return String(cString: value)
        }
        let scheme = part(CURLUPART_SCHEME)?.lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw HTTPClientError(.invalidRequest, detail: "the URL scheme must be http or https")
        }
        guard let host = part(CURLUPART_HOST), !host.isEmpty else {
            throw HTTPClientError(.invalidRequest, detail: "the URL has no host")
        }
        return scheme == "https"
    }

    /// RFC 9110 `token`: one or more tchar.
    static func isToken(_ string: String) -> Bool {
        !string.isEmpty
            && string.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    return true
                default:
                    return "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }
}
