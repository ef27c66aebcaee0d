// PushTransports: the hub's ways out (the relay, direct APNs, direct FCM) and their policy:
// the endpoint backoff, `PushRetryPolicy`, what is pruned and what is kept, sending through
// PushHTTP's client (nghttp2 for HTTP/2, libcurl for the rest). What goes on the wire and what
// an answer means is PushProviders', re-exported here so every importer of the transports sees
// the shared values (`PushDeliveryOutcome`, `PushDeliveryReason`, credentials); where each push
// is reported (`PushLogger`, `PushMetricsFactory`) is PushTelemetry's, re-exported likewise.
@_exported public import PushProviders
@_exported public import PushTelemetry
