import CHapiCurl
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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

    /// The system bundle (if libcurl names one and it is readable) followed by `extra`.
    init(additionalCAPEM extra: [UInt8]) {
        var pem: [UInt8] = []
        if let systemPath = Self.systemBundlePath(), let system = HTTPTrustRoots.readFile(systemPath, limit: HTTPTrustRoots.maximumFileBytes) {
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

    /// Sets `CURLOPT_CAINFO_BLOB` (or the proxy's, `CURLOPT_PROXY_CAINFO_BLOB`) on an easy handle; libcurl copies the struct, not the bytes.
    func apply(to easy: UnsafeMutableRawPointer, option: CURLoption = CURLOPT_CAINFO_BLOB) -> CURLcode {
        var blob = curl_blob(data: bytes.baseAddress, len: bytes.count, flags: UInt32(CURL_BLOB_NOCOPY))
        return hapi_curl_easy_setopt_blob(easy, option, &blob)
    }

    /// libcurl's compiled-in CA bundle (what it would trust without the blob), else the one
    /// OpenSSL names.
    static func systemBundlePath() -> String? {
        if let info = hapi_curl_version_info(), info.pointee.age.rawValue >= CURLVERSION_NINTH.rawValue,
            let cainfo = info.pointee.cainfo
        {
            let path = String(cString: cainfo)
            if access(path, R_OK) == 0 { return path }
        }
        return HTTPTrustRoots.systemBundlePath()
    }
}
