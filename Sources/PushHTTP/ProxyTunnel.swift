import CHapiCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP connection to an origin through an `http://` proxy, for the HTTP/2 engine: libcurl
/// opens it (`CURLOPT_CONNECT_ONLY` with `CURLOPT_HTTPPROXYTUNNEL`), so the CONNECT request,
/// the proxy's answer and its Basic authentication are libcurl's parsing, not ours; the engine
/// then runs TLS and HTTP/2 over the socket (`CURLINFO_ACTIVESOCKET`) exactly as over a direct
/// one. The easy handle owns the socket: it is closed when the tunnel is released.
///
/// Opened on a tunnel thread (`ProxyTunnelOpener`: `curl_easy_perform` blocks), used and released on the loop
/// thread; never by two threads at once.
final class ProxyTunnel: @unchecked Sendable {
    private let easy: UnsafeMutableRawPointer
    let socket: Int32

    private init(easy: UnsafeMutableRawPointer, socket: Int32) {
        self.easy = easy
        self.socket = socket
    }

    deinit { curl_easy_cleanup(easy) }

    /// Connects to `proxy` and asks it for a tunnel to `origin` (its host name travels in the
    /// CONNECT line: the proxy resolves it, we never do). Blocking, for at most `timeout`.
    static func open(through proxy: HTTPProxy, to origin: HTTPOrigin, timeout: Duration) -> Result<ProxyTunnel, HTTPClientError> {
        guard !proxy.isTLS else {
            return .failure(HTTPClientError(.other, detail: "an https:// proxy is served by libcurl's engine, not by a tunnel"))
        }
        guard let easy = curl_easy_init() else { return .failure(HTTPClientError(.other, detail: "curl_easy_init failed (out of memory)")) }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        defer { errorBuffer.deallocate() }
        do {
            let bufferPointer = UnsafeMutableRawPointer(errorBuffer)
            // An http:// URL: libcurl stops after CONNECT (no TLS of its own to the origin).
            let name = origin.host.contains(":") ? "[\(origin.host)]" : origin.host
            var ok = hapi_curl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, bufferPointer) == CURLE_OK
            ok = ok && hapi_curl_easy_setopt_string(easy, CURLOPT_URL, "http://\(name):\(origin.port)/") == CURLE_OK
            ok = ok && hapi_curl_easy_setopt_long(easy, CURLOPT_CONNECT_ONLY, 1) == CURLE_OK
            ok = ok && hapi_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1) == CURLE_OK
            ok = ok && hapi_curl_easy_setopt_long(easy, CURLOPT_TCP_NODELAY, 1) == CURLE_OK
            ok = ok && hapi_curl_easy_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1) == CURLE_OK
            ok = ok && hapi_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, timeout.curlMilliseconds) == CURLE_OK
            ok = ok && hapi_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeout.curlMilliseconds) == CURLE_OK
            ok = ok && ProxyTunnel.configure(easy, for: proxy)
            guard ok else {
                curl_easy_cleanup(easy)
                return .failure(HTTPClientError(.invalidConfiguration, detail: "libcurl refused the proxy options"))
            }
            let code = curl_easy_perform(easy)
            let message = String(cString: errorBuffer)
            // The buffer is ours only for this call.
            _ = hapi_curl_easy_setopt_ptr(easy, CURLOPT_ERRORBUFFER, nil)
            guard code == CURLE_OK else {
                let error = ProxyTunnel.failure(easy: easy, code: code, message: message, proxy: proxy)
                curl_easy_cleanup(easy)
                return .failure(error)
            }
            var socket: curl_socket_t = -1
            guard hapi_curl_easy_getinfo_socket(easy, CURLINFO_ACTIVESOCKET, &socket) == CURLE_OK, socket >= 0 else {
                curl_easy_cleanup(easy)
                return .failure(HTTPClientError(.other, detail: "libcurl gave no socket for the tunnel through \(proxy)"))
            }
            let flags = fcntl(socket, F_GETFL)
            _ = fcntl(socket, F_SETFL, flags | O_NONBLOCK)
            return .success(ProxyTunnel(easy: easy, socket: socket))
        }
    }

    /// The proxy options both engines set on an easy handle: the proxy (never the
    /// environment's: the client decided), a CONNECT tunnel for every origin, Basic
    /// credentials given apart from the URL.
    static func configure(_ easy: UnsafeMutableRawPointer, for proxy: HTTPProxy?) -> Bool {
        guard let proxy else {
            // "" = no proxy, whatever http_proxy and friends say.
            return hapi_curl_easy_setopt_string(easy, CURLOPT_PROXY, "") == CURLE_OK
        }
        var ok = hapi_curl_easy_setopt_string(easy, CURLOPT_PROXY, proxy.curlURL) == CURLE_OK
        ok = ok && hapi_curl_easy_setopt_string(easy, CURLOPT_NOPROXY, "") == CURLE_OK
        ok = ok && hapi_curl_easy_setopt_long(easy, CURLOPT_HTTPPROXYTUNNEL, 1) == CURLE_OK
        if proxy.hasCredentials {
            ok = ok && hapi_curl_easy_setopt_long(easy, CURLOPT_PROXYAUTH, 1 /* CURLAUTH_BASIC */) == CURLE_OK
            ok = ok && hapi_curl_easy_setopt_string(easy, CURLOPT_PROXYUSERNAME, proxy.user ?? "") == CURLE_OK
            ok = ok && hapi_curl_easy_setopt_string(easy, CURLOPT_PROXYPASSWORD, proxy.password ?? "") == CURLE_OK
        }
        return ok
    }

    /// A failed transfer's proxy part, if the proxy is what failed: its answer to CONNECT
    /// (407, or 401 as tinyproxy sends it → `proxyAuthRequired`, any other refusal → `proxyRefused` with the status), or the
    /// proxy itself unreachable (a connect failure like any other).
    static func failure(easy: UnsafeMutableRawPointer, code: CURLcode, message: String, proxy: HTTPProxy) -> HTTPClientError {
        var status = 0
        _ = hapi_curl_easy_getinfo_long(easy, CURLINFO_HTTP_CONNECTCODE, &status)
        if let error = proxyAnswer(status: status, proxy: proxy) { return error }
        let summary = curl_easy_strerror(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
        let text = message.isEmpty || message == summary ? summary : "\(summary) (\(message))"
        let kind: HTTPClientError.Code =
            switch code {
            case CURLE_COULDNT_RESOLVE_PROXY: .dnsFailure
            case CURLE_OPERATION_TIMEDOUT: .timeout
            case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION: .tlsFailure
            default: .connectionRefused
            }
        return HTTPClientError(kind, curlCode: Int(code.rawValue), detail: "through proxy \(proxy): \(text)")
    }

    /// The error for a CONNECT answered with `status`, or nil when it was not refused.
    static func proxyAnswer(status: Int, proxy: HTTPProxy) -> HTTPClientError? {
        guard status >= 300 else { return nil }
        // 407 is the standard answer; tinyproxy (and some others) answer 401 to CONNECT.
        if status == 407 || status == 401 {
            let why = proxy.hasCredentials ? "refused the credentials" : "wants credentials (none configured)"
            return HTTPClientError(.proxyAuthRequired, detail: "proxy \(proxy) \(why): \(status)")
        }
        return HTTPClientError(.proxyRefused, detail: "proxy \(proxy) refused CONNECT: \(status)")
    }
}
