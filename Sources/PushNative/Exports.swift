// What `import PushNative` brings into a hub: the face, not the house. Each type a hub uses is
// re-exported by name from the layer that defines it; the layers' machinery (JSON, base64,
// digests, locks, the HTTP client, the transports) stays behind, so nothing here can collide
// with AsyncHTTPClient's `HTTPClient`, NIOHTTP1's `HTTPHeaders`, swift-crypto's `Digest` or a
// hub's own `JSONValue`. A hub that wants a whole layer imports that module itself.

// PushCore: the JSON value a hub hands the composer and the scheduler.
@_exported public import enum PushCore.PushJSONValue
@_exported public import struct PushCore.PushJSONParseError

// PushEnvelope: payloads, keys, the envelope and the device side.
@_exported public import struct PushEnvelope.PushNotificationPayload
@_exported public import struct PushEnvelope.PushNotificationType
@_exported public import struct PushEnvelope.PushNotificationSeverity
@_exported public import struct PushEnvelope.PushKey
@_exported public import enum PushEnvelope.PushKeyError
@_exported public import enum PushEnvelope.PushEnvelopeCipher
@_exported public import struct PushEnvelope.PushEnvelopeError
@_exported public import enum PushEnvelope.ReceivedPush

// DeviceRegistry: registrations and the store protocol with its implementations.
@_exported public import struct DeviceRegistry.PushDeviceRegistry
@_exported public import protocol DeviceRegistry.PushDeviceStore
@_exported public import struct DeviceRegistry.PushDeviceStoreError
@_exported public import struct DeviceRegistry.PushDeviceRegistration
@_exported public import enum DeviceRegistry.PushDevicePlatform
@_exported public import struct DeviceRegistry.PushRegistrationRequest
@_exported public import struct DeviceRegistry.PushRegistrationError
@_exported public import class DeviceRegistry.SQLitePushDeviceStore
@_exported public import class DeviceRegistry.InMemoryPushDeviceStore
// Which store `NativePush.start` opens (`PushConfiguration.registry`): one type in every build.
@_exported public import struct DeviceRegistry.PushDeviceStoreFactory
#if PostgreSQL  // the package trait, on by default; off, the hub builds without libpq
@_exported public import class DeviceRegistryPostgres.PostgresPushDeviceStore
#endif
// Web Push subscriptions (the JavaScript hub's push_subscriptions) and their routes.
@_exported public import struct DeviceRegistry.PushWebSubscription
@_exported public import protocol DeviceRegistry.PushWebSubscriptionStore
@_exported public import struct DeviceRegistry.PushWebSubscriptions

// PushProviders, PushTransports and PushTelemetry: credentials, outcomes and reasons, the retry
// policy, and the logger hook.
@_exported public import struct PushProviders.APNsCredentials
@_exported public import struct PushTransports.FCMServiceAccount
@_exported public import struct PushProviders.PushCredentialError
@_exported public import struct PushTransports.PushRetryPolicy
@_exported public import protocol PushTelemetry.PushLogger
@_exported public import struct PushTelemetry.PushLogRecord
@_exported public import struct PushTelemetry.SilentPushLogger
@_exported public import enum PushProviders.PushDeliveryOutcome
@_exported public import struct PushProviders.PushDeliveryReason
@_exported public import enum PushProviders.PushTransportName

// Metrics: a sink shaped like swift-metrics' factory, and a ready Prometheus aggregator.
@_exported public import protocol PushTelemetry.PushMetricsFactory
@_exported public import protocol PushTelemetry.PushCounterHandler
@_exported public import protocol PushTelemetry.PushTimerHandler
@_exported public import protocol PushTelemetry.PushMeterHandler
@_exported public import class PushTelemetry.PushPrometheusMetrics
