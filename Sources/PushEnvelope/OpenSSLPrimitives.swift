import CHapiOpenSSL

/// SHA-256 and secure random bytes from OpenSSL, for the rest of the package.
package enum Digest {
    /// SHA-256 of `bytes`.
    package static func sha256<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        let input = Array(bytes)
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = input.withUnsafeBytes { raw in
            digest.withUnsafeMutableBufferPointer { out in
                EVP_Digest(raw.baseAddress, raw.count, out.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        // EVP_Digest with SHA-256 cannot fail short of memory exhaustion; an all-zero digest
        // would still be a stable value, never a crash.
        _ = ok
        return digest
    }

    /// Lowercase hex of `bytes`.
    package static func hex<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses lowercase or uppercase hex; nil on an odd length or a non-hex character.
    package static func bytes(fromHex text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let high = hexValue(chars[i]), let low = hexValue(chars[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

/// A short, stable, non-reversible name for a device token, safe to log: the first 12 hex
/// digits of its SHA-256 (the same fingerprint the official relay logs).
package enum TokenFingerprint {
    package static func of(_ token: String) -> String {
        String(Digest.hex(Digest.sha256(Array(token.utf8))).prefix(12))
    }
}

/// Cryptographically secure random bytes.
package enum SecureRandom {
    /// `count` bytes from OpenSSL's CSPRNG.
    package static func bytes(_ count: Int) throws(PushEnvelopeError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let rc = out.withUnsafeMutableBufferPointer { buffer in
            RAND_bytes(buffer.baseAddress, Int32(count))
        }
        guard rc == 1 else { throw PushEnvelopeError.randomUnavailable }
        return out
    }
}
