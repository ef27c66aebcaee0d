import PushEnvelope
import Foundation

/// The framework-neutral face of `POST/DELETE /api/devices/register`: a hub hands over the
/// authenticated namespace and the raw request body and answers with what comes back.
/// Nothing a client sends can make it crash or answer 500; only a failing store does.
public struct PushDeviceRegistry: Sendable {
    public let store: any PushDeviceStore
    private let clock: @Sendable () -> Int64

    /// - Parameters:
    ///   - store: where registrations live.
    ///   - now: milliseconds since 1970; injectable so tests control `createdAt`/`updatedAt`.
    public init(store: any PushDeviceStore, now: @escaping @Sendable () -> Int64 = PushDeviceRegistry.systemMilliseconds) {
        self.store = store
        self.clock = now
    }

    /// The wall clock in milliseconds since 1970.
    @Sendable public static func systemMilliseconds() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }

    /// What the hub should answer: status and JSON body.
    public struct Answer: Sendable, Equatable {
        public let status: Int
        public let body: String

        public static let ok = Answer(status: 200, body: #"{"ok":true}"#)
    }

    /// Handles a register body (`{"token","platform","deviceId","pushKey"?}`).
    public func handleRegister(namespace: String, body: [UInt8]) async -> Answer {
        do {
            let request = try Self.decodeRegistration(namespace: namespace, body: body)
            _ = try await store.upsert(request, now: clock())
            return .ok
        } catch let error as PushRegistrationError {
            return Answer(status: error.httpStatus, body: error.responseBody)
        } catch {
            return Self.storeFailure(error)
        }
    }

    /// Handles an unregister body (`{"token"}`); an unknown token still answers ok.
    public func handleUnregister(namespace: String, body: [UInt8]) async -> Answer {
        do {
            let token = try Self.decodeUnregistration(body: body)
            try await store.unregister(namespace: namespace, token: token)
            return .ok
        } catch let error as PushRegistrationError {
            return Answer(status: error.httpStatus, body: error.responseBody)
        } catch {
            return Self.storeFailure(error)
        }
    }

    /// Validates and stores a registration.
    @discardableResult
    public func register(_ request: PushRegistrationRequest) async throws -> PushDeviceRegistration {
        try await store.upsert(request, now: clock())
    }

    /// Removes `token` from `namespace`; true when a row was removed.
    @discardableResult
    public func unregister(namespace: String, token: String) async throws -> Bool {
        try await store.unregister(namespace: namespace, token: token)
    }

    /// A store failure is the hub's problem, not the client's: 500 with a message that names
    /// no file path (the full error goes to the hub's own logs through `register(_:)`).
    private static func storeFailure(_ error: any Error) -> Answer {
        Answer(status: 500, body: JSONValue.object(["error": "Device registry unavailable"]).canonicalString)
    }

    /// Decodes and validates a register body as the JavaScript hub does (Content-Type
    /// ignored; a body that is not JSON is `null`), then by our stricter rules.
    public static func decodeRegistration(namespace: String, body: [UInt8]) throws(PushRegistrationError) -> PushRegistrationRequest {
        try RegistrationValidation.register(namespace: namespace, body: RegistrationValidation.parseBody(body))
    }

    /// Decodes and validates an unregister body (`{"token"}`).
    public static func decodeUnregistration(body: [UInt8]) throws(PushRegistrationError) -> String {
        try RegistrationValidation.unregister(body: RegistrationValidation.parseBody(body))
    }
}
