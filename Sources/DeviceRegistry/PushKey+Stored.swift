package import PushEnvelope

extension PushKey {
    /// A key as a store keeps it (canonical base64), decoded once from the column's bytes; nil
    /// when it no longer parses, so the device is treated as keyless instead of failing a read.
    package init?(storedBase64 bytes: UnsafeBufferPointer<UInt8>) {
        guard let decoded = Base64.decodePadded(utf8: bytes, byteCount: PushKey.byteCount), let key = try? PushKey(bytes: decoded)
        else { return nil }
        self = key
    }
}
