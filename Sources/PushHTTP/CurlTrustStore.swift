import CHapiCurl
import CHapiOpenSSL
import Glibc

/// The CA certificates an `HTTPClient` trusts when an additional CA file is configured: the
/// system bundle (libcurl's built-in `CURLOPT_CAINFO`) followed by the operator's CA, as one
/// PEM blob in memory handed to libcurl by pointer (`CURLOPT_CAINFO_BLOB`, `CURL_BLOB_NOCOPY`).
///
/// Why a blob: `CURLOPT_CAINFO` *replaces* the system bundle, and an operator who points a hub
/// at a self-hosted relay expects "the public roots and my CA", not "only my CA". Building the
/// combined bundle in memory leaves no temporary file behind and works on a read-only
/// filesystem. libcurl's default `CURLOPT_CAPATH` (a hashed directory, where the build has one)
/// stays in effect as well.
///
/// The memory is immutable after init and freed in deinit, which runs only after the loop
/// thread has cleaned up the multi handle (the loop holds the store until then).
package final class CurlTrustStore: @unchecked Sendable {
    private let bytes: UnsafeMutableRawBufferPointer

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

    /// The system bundle (if libcurl names one and it is readable) followed by `extra`.
    init(additionalCAPEM extra: [UInt8]) {
        var pem: [UInt8] = []
        if let systemPath = Self.systemBundlePath(), let system = Self.readFile(systemPath, limit: Self.maximumFileBytes) {
            pem = system
            pem.append(0x0A)
        }
        pem.append(contentsOf: extra)
        pem.append(0x0A)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pem.count, alignment: 1)
        buffer.copyBytes(from: pem)
        bytes = buffer
    }

    deinit { bytes.deallocate() }

    /// Size of the combined PEM bundle.
    var byteCount: Int { bytes.count }

    /// Sets `CURLOPT_CAINFO_BLOB` on an easy handle; libcurl copies the struct, not the bytes.
    func apply(to easy: UnsafeMutableRawPointer) -> CURLcode {
        var blob = curl_blob(data: bytes.baseAddress, len: bytes.count, flags: UInt32(CURL_BLOB_NOCOPY))
        return hapi_curl_easy_setopt_blob(easy, CURLOPT_CAINFO_BLOB, &blob)
    }

    /// libcurl's compiled-in CA bundle, else the usual locations.
    static func systemBundlePath() -> String? {
        if let info = hapi_curl_version_info(), info.pointee.age.rawValue >= CURLVERSION_NINTH.rawValue,
            let cainfo = info.pointee.cainfo
        {
            let path = String(cString: cainfo)
            if access(path, R_OK) == 0 { return path }
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
