import CHapiOpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The OpenSSL client context of the HTTP/2 engine: TLS 1.2 or later, peer verification
/// always on against the system trust store plus the operator's extra CA, ALPN offering `h2`
/// then `http/1.1` (so a server without HTTP/2 is recognised and handed to libcurl instead of
/// failing), and the modes non-blocking writes need.
///
/// One context per client, immutable after init: OpenSSL allows `SSL_new` from it on any
/// thread, and the loop thread is the only one that does.
final class TLSClientContext: @unchecked Sendable {
    let raw: OpaquePointer

    /// The wire form of the ALPN list: length-prefixed protocol names.
    static let alpnProtocols: [UInt8] = [2] + Array("h2".utf8) + [8] + Array("http/1.1".utf8)

    /// - Parameter additionalCAPEM: PEM certificates trusted in addition to the system store.
    init(additionalCAPEM: [UInt8]?) throws(HTTPClientError) {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            throw HTTPClientError(.other, detail: "SSL_CTX_new failed: \(OpenSSLError.drain())")
        }
        raw = ctx
        guard hapi_ssl_ctx_set_min_tls12(ctx) == 1 else {
            throw HTTPClientError(.invalidConfiguration, detail: "cannot require TLS 1.2: \(OpenSSLError.drain())")
        }
        _ = hapi_ssl_ctx_set_client_modes(ctx)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        // The system roots: OpenSSL's hashed certificate directory (on Debian /etc/ssl/certs,
        // kept by update-ca-certificates from the same bundle libcurl reads), looked up lazily
        // by subject, so a client never parses ~140 roots it will not use. Without such a
        // directory, the bundle file itself.
        if let directory = Self.hashedCertificateDirectory() {
            if SSL_CTX_load_verify_locations(ctx, nil, directory) != 1 { ERR_clear_error() }
        } else if let bundle = HTTPTrustRoots.systemBundlePath() {
            if SSL_CTX_load_verify_locations(ctx, bundle, nil) != 1 { ERR_clear_error() }
        }
        if let pem = additionalCAPEM {
            let added = try Self.addCertificates(pem, to: ctx)
            guard added > 0 else {
                throw HTTPClientError(.invalidConfiguration, detail: "additionalTrustedCAFile holds no usable certificate")
            }
        }
        let rc = Self.alpnProtocols.withUnsafeBufferPointer { buffer in
            SSL_CTX_set_alpn_protos(ctx, buffer.baseAddress, UInt32(buffer.count))
        }
        guard rc == 0 else {  // 0 is success for this one call
            throw HTTPClientError(.invalidConfiguration, detail: "cannot set ALPN protocols")
        }
    }

    deinit { SSL_CTX_free(raw) }

    /// OpenSSL's default certificate directory (`SSL_CERT_DIR` or the compiled-in one) when
    /// it holds hashed links (`<hash>.0`), else nil.
    static func hashedCertificateDirectory() -> String? {
        let variable = X509_get_default_cert_dir_env().map { String(cString: $0) } ?? "SSL_CERT_DIR"
        let directory = getenv(variable).map { String(cString: $0) } ?? X509_get_default_cert_dir().map { String(cString: $0) }
        guard let directory, let handle = opendir(directory) else { return nil }
        defer { closedir(handle) }
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            // "5ad8a5d6.0": eight hex digits, a dot, a digit.
            let parts = name.split(separator: ".")
            if parts.count == 2, parts[0].count == 8, parts[0].allSatisfy(\.isHexDigit), parts[1].allSatisfy(\.isNumber) {
                return directory
            }
        }
        return nil
    }

    /// Parses every certificate of `pem` into the context's store; returns how many were added.
    private static func addCertificates(_ pem: [UInt8], to ctx: OpaquePointer) throws(HTTPClientError) -> Int {
        guard let store = SSL_CTX_get_cert_store(ctx) else { return 0 }
        let bio: OpaquePointer? = pem.withUnsafeBytes { BIO_new_mem_buf($0.baseAddress, Int32(clamping: $0.count)) }
        guard let bio else { throw HTTPClientError(.other, detail: "BIO_new_mem_buf failed") }
        defer { BIO_free(bio) }
        var added = 0
        while let certificate = hapi_pem_read_x509_no_prompt(bio) {
            // A certificate already present (the same CA twice) is not an error.
            if X509_STORE_add_cert(store, certificate) == 1 { added += 1 }
            X509_free(certificate)
        }
        ERR_clear_error()  // the loop ends on "no start line"
        return added
    }
}

/// OpenSSL's thread-local error queue as text, emptied.
enum OpenSSLError {
    static func drain() -> String {
        var messages: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            if messages.count >= 4 { ERR_clear_error(); break }
        }
        return messages.isEmpty ? "no OpenSSL error reported" : messages.joined(separator: "; ")
    }
}
