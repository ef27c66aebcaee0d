// PushTransports: the hub's ways out (the relay, direct APNs, direct FCM, Web Push), all sent
// through one `DeliveryPipeline` (the window, the endpoint backoff, `PushRetryPolicy`, the log
// record), and the provider clients (`APNsClient`, `FCMClient`) the relay shares; sending through
// PushHTTP's client (nghttp2 for HTTP/2, libcurl for the rest). What goes on the wire and what
// an answer means is PushProviders', re-exported here so every importer of the transports sees
// the shared values (`PushDeliveryOutcome`, `PushDeliveryReason`, credentials); where each push
// is reported (`PushLogger`, `PushMetricsFactory`) is PushTelemetry's, re-exported likewise.
@_exported public import PushProviders
@_exported public import PushTelemetry
