// An event loop's two ties to the operating system: a level-triggered readiness selector over
// many descriptors, and a wake-up other threads write to. One protocol each, one file per
// backend, chosen at build time (as swift-nio's `Selector` and its SelectorEpoll/SelectorKqueue):
//   - SelectorEpoll.swift, Linux: epoll and an eventfd (the default there);
//   - SelectorPoll.swift, everywhere else, and on Linux built with `-DHAPI_PUSH_PORTABLE`
//     (`make test-portable`): poll(2) and a non-blocking pipe.
// Each descriptor is registered with a token the owner chooses; `wait` reports tokens.

/// A readiness selector. Its owner's thread only (after `make`); `mutating` because the
/// poll(2) backend keeps its descriptor list in the value.
package protocol PlatformSelector: Sendable {
    /// The call named when `set` is refused.
    static var registrationCall: String { get }
    /// The interest and readiness bits, the backend's own values.
    static var readable: UInt32 { get }
    static var writable: UInt32 { get }
    static var error: UInt32 { get }
    static var hangup: UInt32 { get }

    /// An empty selector.
    static func make() throws(PlatformError) -> Self
    /// Adds `socket` (`add`) or changes its interest. False (errno set) if refused: adding one
    /// already there, or changing one that is not.
    mutating func set(_ socket: Int32, events: UInt32, token: UInt64, add: Bool) -> Bool
    mutating func remove(_ socket: Int32)
    /// Waits at most `timeout` ms (-1: no limit); writes each ready descriptor's token and
    /// readiness, and returns how many (-1 with errno on failure).
    mutating func wait(tokens: inout [UInt64], readiness: inout [UInt32], timeout: Int32) -> Int
    func close()
}

/// What wakes a thread waiting in a selector: `wake()` from any thread makes `readFD`
/// readable until `drain()`.
package protocol PlatformWakeup: Sendable {
    var readFD: Int32 { get }
    static func make() throws(PlatformError) -> Self
    func wake()
    func drain()
    func close()
}

extension PlatformSelector {
    /// A new selector with `wake` registered under token 0.
    package static func make(wake: some PlatformWakeup) throws(PlatformError) -> Self {
        var selector = try make()
        guard selector.set(wake.readFD, events: readable, token: 0, add: true) else {
            let error = PlatformError.last(registrationCall)
            selector.close()
            throw error
        }
        return selector
    }
}

/// The readiness bits of this build's selector, for code that need not name the backend.
package enum PlatformReadiness {
    package static let readable = PlatformSelectorBackend.readable
    package static let writable = PlatformSelectorBackend.writable
    package static let error = PlatformSelectorBackend.error
    package static let hangup = PlatformSelectorBackend.hangup
}
