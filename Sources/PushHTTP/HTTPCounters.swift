import Synchronization

/// What both engines count, read by `HTTPClient.statistics` and by leak tests.
final class HTTPCounters: Sendable {
    /// libcurl easy handles created and not yet cleaned up.
    let liveEasyHandles = Atomic<Int>(0)
    /// HTTP/2 streams opened by the nghttp2 engine and not yet closed.
    let liveExchanges = Atomic<Int>(0)
    /// HTTP/2 connections of the nghttp2 engine that completed their handshake and are open.
    let openH2Connections = Atomic<Int>(0)
    /// Requests handed to an engine's wire.
    let requestsSent = Atomic<Int>(0)
}
