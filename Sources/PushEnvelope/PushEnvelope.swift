// PushEnvelope: the contract's payload, push keys, and the two message encryptions (our
// AES-256-GCM envelope; Web Push's RFC 8291 `aes128gcm`, in WebPush/). No network, no storage.
// The core it is written on (the JSON parser and value, canonical JSON, base64, safe text) is
// PushCore, re-exported here so every importer of the envelope reads and writes JSON the same way.
@_exported public import PushCore
