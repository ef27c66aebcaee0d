// PushProviders: what each push provider wants on the wire and what its answers mean, with no
// I/O. One request builder and one answer parser per provider (`APNsProvider`, `FCMProvider`,
// `RelayProvider`; a Web Push provider joins them the same way), the provider tokens (the APNs
// JWT, the FCM OAuth assertion and its answer), and the values every layer above shares
// (`PushDeliveryOutcome`, `PushDeliveryReason`). The hub's transports (PushTransports) and the
// relay (PushRelay) send what the builders make and decide on what the parsers read; neither
// spells a provider header, error field or reason itself (`ProviderVocabularyTests` checks).
