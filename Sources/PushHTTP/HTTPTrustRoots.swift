import CHapiOpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the client's trust roots come from, found with OpenSSL's and the file system's help
/// only (the HTTP/2 engine has no libcurl in it): the system bundle file, and the operator's
/// additional CA file, checked and read once per client.
package enum HTTPTrustRoots {
    /// Largest CA file accepted: a full system bundle is ~200 KB.
    static let maximumFileBytes = 4 << 20

    /// The operator's CA file, checked: the one check `hapi-push config`, `PushConfiguration`
    /// and the client share, so a file refused here is reported at load and ignored there, and
    /// never brings a client down. A regular file (not a directory, a device such as /dev/zero,
    /// or a pipe that would block), at most 4 MiB, holding at least one certificate OpenSSL can
    /// parse. The error's detail names the path and what is wrong.
    package static func readAdditionalCAFile(_ path: String) throws(HTTPClientError) -> [UInt8] {
        func refuse(_ why: String) -> HTTPClientError { HTTPClientError(.invalidConfiguration, detail: "\(path) \(why)") }
        // O_NONBLOCK: opening a FIFO must not wait for a writer.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { throw refuse("cannot be read: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw refuse("cannot be read: \(String(cString: strerror(errno)))") }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw refuse((info.st_mode & S_IFMT) == S_IFDIR ? "is a directory, not a PEM file" : "is not a regular file (a device or a pipe)")
        }
        guard info.st_size <= maximumFileBytes else { throw refuse("is larger than 4 MiB: not a CA file") }
        guard let extra = readAll(fd, limit: maximumFileBytes) else { throw refuse("cannot be read (or grew past 4 MiB)") }
        guard !extra.isEmpty else { throw refuse("is empty") }
        let certificates = countCertificates(extra)
        guard certificates > 0 else {
            let text = String(decoding: extra.prefix(1 << 16), as: UTF8.self)
            if text.contains("PRIVATE KEY-----") {
                throw refuse("holds a private key, not a certificate: give the CA's certificate (-----BEGIN CERTIFICATE-----)")
            }
            throw refuse("holds no PEM certificate (-----BEGIN CERTIFICATE-----) that OpenSSL can read")
        }
        return extra
    }

    /// How many PEM certificates OpenSSL parses from `pem` (never prompting for a pass phrase).
    static func countCertificates(_ pem: [UInt8]) -> Int {
        pem.withUnsafeBytes { raw -> Int in
            guard raw.count <= Int(Int32.max), let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return 0 }
            defer { BIO_free(bio) }
            var count = 0
            while let certificate = hapi_pem_read_x509_no_prompt(bio) {
                X509_free(certificate)
                count += 1
            }
            ERR_clear_error()
            return count
        }
    }

    /// The system CA bundle: `SSL_CERT_FILE` or OpenSSL's compiled-in file when readable, else
    /// the distributions' usual locations.
    static func systemBundlePath() -> String? {
        let variable = X509_get_default_cert_file_env().map { String(cString: $0) } ?? "SSL_CERT_FILE"
        if let path = getenv(variable).map({ String(cString: $0) }) ?? X509_get_default_cert_file().map({ String(cString: $0) }),
            access(path, R_OK) == 0
        {
            return path
        }
        let known = [
            "/etc/ssl/certs/ca-certificates.crt",  // Debian, Ubuntu, Alpine
            "/etc/pki/tls/certs/ca-bundle.crt",  // Fedora, RHEL
            "/etc/ssl/ca-bundle.pem",  // openSUSE
            "/etc/ssl/cert.pem",  // Alpine, macOS-style
        ]
        return known.first { access($0, R_OK) == 0 }
    }

    /// The whole file, or nil if it cannot be read or exceeds `limit`.
    static func readFile(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return readAll(fd, limit: limit)
    }

    /// Everything `fd` holds, or nil on an error or beyond `limit`.
    static func readAll(_ fd: Int32, limit: Int) -> [UInt8]? {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { return result }
            result.append(contentsOf: chunk[0..<n])
            if result.count > limit { return nil }
        }
    }
}
