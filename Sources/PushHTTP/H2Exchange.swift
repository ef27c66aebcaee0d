import CHapiNghttp2

/// One request on one HTTP/2 stream: the request body being sent and the
/// response as it arrives. Loop thread only; nghttp2 reaches it through the stream's user data
/// (unretained: the connection's stream table owns it until the stream closes).
final class H2Exchange {
    let transfer: HTTPTransfer
    var streamID: Int32 = 0
    /// The request body and how much of it nghttp2 has taken.
    let body: [UInt8]
    var bodyOffset = 0
    /// The HEADERS frame went out: from then on the server may have acted on the request.
    var requestSent = false

    var status = 0
    var headers = HTTPHeaders()
    var responseBody: [UInt8] = []
    var headerBytes = 0
    var endStreamReceived = false
    /// Set when we reset the stream ourselves (too large): the stream's result.
    var failure: HTTPClientError?
    /// The transfer's slot was filled already (cancelled or timed out): ignore the close.
    var finished = false

    init(transfer: HTTPTransfer) {
        self.transfer = transfer
        self.body = transfer.request.body
    }

    /// What the stream came to when nghttp2 closed it with `errorCode`.
    func result(errorCode: UInt32) -> Result<HTTPResponse, HTTPClientError> {
        if let failure { return .failure(failure) }
        if !requestSent {
            return .failure(HTTPClientError(.streamRefused, detail: "the request was never sent on its connection"))
        }
        if status != 0, endStreamReceived {
            // RST_STREAM(NO_ERROR) after a complete response only asks us to stop sending.
            return .success(HTTPResponse(status: status, headers: headers, body: responseBody, httpVersion: .http2))
        }
        if errorCode == 7 {  // REFUSED_STREAM: not processed, safe to send again
            return .failure(HTTPClientError(.streamRefused, detail: "the server refused the stream (REFUSED_STREAM)"))
        }
        let name = nghttp2_http2_strerror(errorCode).map { String(cString: $0) } ?? "error \(errorCode)"
        return .failure(
            HTTPClientError(.connectionLost, detail: "the stream closed before the response completed (\(name))"))
    }
}
