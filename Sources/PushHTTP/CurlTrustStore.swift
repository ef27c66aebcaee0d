import CHapiCurl
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
final class CurlTrustStore: @unchecked Sendable {
    private let bytes: UnsafeMutableRawBufferPointer

    /// Largest CA file accepted: a full system bundle is ~200 KB.
    static let maximumFileBytes = 4 << 20

    /// The operator's CA file, checked: readable, at most 4 MiB, with a PEM certificate in it.
    static func readAdditionalCAFile(_ path: String) throws(HTTPClientError) -> [UInt8] {
        guard let extra = readFile(path, limit: maximumFileBytes) else {
            throw HTTPClientError(
                .invalidConfiguration, detail: "additionalTrustedCAFile cannot be read (missing, unreadable or over 4 MiB)")
        }
        guard containsPEMCertificate(extra) else {
            throw HTTPClientError(
                .invalidConfiguration, detail: "additionalTrustedCAFile holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        return extra
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

    static func containsPEMCertificate(_ bytes: [UInt8]) -> Bool {
        let marker = Array("-----BEGIN CERTIFICATE-----".utf8)
        guard bytes.count >= marker.count else { return false }
        for start in 0...(bytes.count - marker.count) where bytes[start] == marker[0] {
            if bytes[start..<(start + marker.count)].elementsEqual(marker) { return true }
        }
        return false
    }

    /// The whole file, or nil if it cannot be read or exceeds `limit`.
    static func readFile(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
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
