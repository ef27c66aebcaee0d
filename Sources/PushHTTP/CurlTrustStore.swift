import CHapiCurl
import PushSync
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
/// Built at the first libcurl transfer that needs it, not when the client starts: most clients
/// never hand a transfer to libcurl (it serves only HTTP/1.1 origins and `https://` proxies),
/// and the system bundle is ~200 KB of memory held for the client's life. Once built, the
/// memory is immutable and freed in deinit, which runs only after the loop thread has cleaned
/// up the multi handle (the loop holds the store until then).
final class CurlTrustStore: Sendable {
    private let extra: [UInt8]
    /// The combined bundle's address and size, once built (an address, so the type stays Sendable).
    private let built = Locked<(address: UInt, count: Int)?>(nil)

    /// The system bundle (if libcurl names one and it is readable) followed by `extra`, when
    /// first applied.
    init(additionalCAPEM extra: [UInt8]) {
        self.extra = extra
    }

    deinit {
        if let (address, _) = built.withLock({ $0 }), let pointer = UnsafeMutableRawPointer(bitPattern: address) {
            pointer.deallocate()
        }
    }

    /// The combined bundle, built on first use.
    private var bytes: UnsafeRawBufferPointer {
        let (address, count) = built.withLock { built in
            if let built { return built }
            var pem: [UInt8] = []
            if let systemPath = Self.systemBundlePath(), let system = HTTPTrustRoots.readFile(systemPath, limit: HTTPTrustRoots.maximumFileBytes) {
                pem = system
                pem.append(0x0A)
            }
            pem.append(contentsOf: extra)
            pem.append(0x0A)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pem.count, alignment: 1)
            buffer.copyBytes(from: pem)
            let made = (address: UInt(bitPattern: buffer.baseAddress), count: pem.count)
            built = made
            return made
        }
        return UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: address), count: count)
    }

    /// Whether the bundle has been built (tests: a client that never used libcurl has not).
    var isBuilt: Bool { built.withLock { $0 != nil } }

    /// Size of the combined PEM bundle (building it).
    var byteCount: Int { bytes.count }

    /// Sets `CURLOPT_CAINFO_BLOB` (or the proxy's, `CURLOPT_PROXY_CAINFO_BLOB`) on an easy handle; libcurl copies the struct, not the bytes.
    func apply(to easy: UnsafeMutableRawPointer, option: CURLoption = CURLOPT_CAINFO_BLOB) -> CURLcode {
        let bytes = self.bytes
        var blob = curl_blob(data: UnsafeMutableRawPointer(mutating: bytes.baseAddress), len: bytes.count, flags: UInt32(CURL_BLOB_NOCOPY))
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
