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
/// and the system bundle is ~200 KB of memory held for the client's life. The bundle's path is
/// found when the client starts (as before, and not on the loop thread, which then reads no
/// environment). A read that fails then (descriptors exhausted, say) is tried again at the next
/// transfer rather than kept for the client's life; what that transfer got stays allocated,
/// because libcurl holds it by pointer. Every blob is immutable once made and freed in deinit,
/// which runs only after the loop thread has cleaned up the multi handle (the loop holds the
/// store until then).
final class CurlTrustStore: Sendable {
    private struct State {
        /// The combined bundle's address and size, once built whole (an address: Sendable).
        var built: (address: UInt, count: Int)?
        /// Blobs made without the system bundle because reading it failed, kept alive for
        /// the transfers that got them.
        var degraded: [UInt] = []
    }

    private let extra: [UInt8]
    private let systemPath: String?
    private let state = Locked(State())
    /// Failed reads of the system bundle tolerated before the extra CA alone is kept for good.
    static let maximumRetries = 4

    /// The system bundle (if libcurl names one) followed by `extra`, made when first applied.
    convenience init(additionalCAPEM extra: [UInt8]) {
        self.init(additionalCAPEM: extra, systemBundlePath: Self.systemBundlePath())
    }

    /// With the system bundle at `systemBundlePath` (tests: one that appears later).
    init(additionalCAPEM extra: [UInt8], systemBundlePath: String?) {
        self.extra = extra
        self.systemPath = systemBundlePath
    }

    deinit {
        let state = state.withLock { $0 }
        for address in state.degraded + (state.built.map { [$0.address] } ?? []) {
            UnsafeMutableRawPointer(bitPattern: address)?.deallocate()
        }
    }

    /// The combined bundle, built on first use.
    private var bytes: UnsafeRawBufferPointer {
        let (address, count) = state.withLock { state in
            if let built = state.built { return built }
            var pem: [UInt8] = []
            var whole = true
            if let systemPath {
                if let system = HTTPTrustRoots.readFile(systemPath, limit: HTTPTrustRoots.maximumFileBytes) {
                    pem = system
                    pem.append(0x0A)
                } else {
                    whole = state.degraded.count >= Self.maximumRetries
                }
            }
            pem.append(contentsOf: extra)
            pem.append(0x0A)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: pem.count, alignment: 1)
            buffer.copyBytes(from: pem)
            let made = (address: UInt(bitPattern: buffer.baseAddress), count: pem.count)
            if whole { state.built = made } else { state.degraded.append(made.address) }
            return made
        }
        return UnsafeRawBufferPointer(start: UnsafeRawPointer(bitPattern: address), count: count)
    }

    /// Whether the bundle has been built (tests: a client that never used libcurl has not).
    var isBuilt: Bool { state.withLock { $0.built != nil } }

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
