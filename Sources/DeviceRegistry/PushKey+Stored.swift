package import PushEnvelope

extension PushKey {
    /// A key as a store keeps it (canonical base64), decoded once from the column's bytes; nil
    /// when it no longer parses, so the device is treated as keyless instead of failing a read.
    package init?(storedBase64 bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count == Base64.encodedLength(PushKey.byteCount),
            let decoded = try? Base64.decode(utf8: bytes), let key = try? PushKey(bytes: decoded)
        else { return nil }
        self = key
    }
}
