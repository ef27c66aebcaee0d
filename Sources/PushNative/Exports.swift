// PushNative is the one module a hub imports: it re-exports the layers beneath it so
// `import PushNative` is enough to register devices, build payloads and dispatch.
@_exported public import PushEnvelope
@_exported public import DeviceRegistry
@_exported public import DeviceRegistryPostgres
@_exported public import PushTransports
