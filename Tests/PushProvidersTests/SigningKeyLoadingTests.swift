import CHapiOpenSSL
import PushTestSupport
import Testing

@testable import PushProviders

/// `JWTSigningKey(pem:)` asks OpenSSL for the key type it wants first and falls back on the
/// general PEM reader: the same keys accepted, the same errors, and nothing left in OpenSSL's
/// error queue by the attempt that read nothing.
@Suite struct SigningKeyLoadingTests {
    static func load(_ pem: String, _ algorithm: JWTSigningKey.Algorithm) -> Result<JWTSigningKey, PushCredentialError> {
        do { return .success(try JWTSigningKey(pem: Array(pem.utf8), algorithm: algorithm, source: "test key")) } catch { return .failure(error) }
    }

    static func failure(_ result: Result<JWTSigningKey, PushCredentialError>) -> PushCredentialError? {
        if case .failure(let error) = result { return error }
        return nil
    }

    @Test func everyFormOfTheRightKeyLoadsAndSigns() throws {
        let forms: [(String, JWTSigningKey.Algorithm)] = [
            (try #require(TestKeys.p256()).privateKeyPEM, .es256),
            (try #require(TestKeys.traditionalPEM()), .es256),
            ("Bag Attributes: from a keychain export\n" + (try #require(TestKeys.p256()).privateKeyPEM), .es256),
            (try #require(TestKeys.rsa2048()).privateKeyPEM, .rs256),
            (try #require(TestKeys.traditionalPEM(rsa: true)), .rs256),
        ]
        for (pem, algorithm) in forms {
            ERR_clear_error()
            let key = try Self.load(pem, algorithm).get()
            #expect(key.algorithm == algorithm)
            #expect(try key.sign(Array("header.claims".utf8)).count >= 64)
            #expect(ERR_peek_error() == 0, "\(algorithm) \(pem.prefix(30))")
        }
    }

    @Test func anotherKeyTypeIsNamedAndLeavesNoOpenSSLError() throws {
        let cases: [(String, JWTSigningKey.Algorithm, String)] = [
            (try #require(TestKeys.rsa2048()).privateKeyPEM, .es256, "is not a P-256 (prime256v1) EC private key"),
            (try #require(TestKeys.p384()).privateKeyPEM, .es256, "is not a P-256 (prime256v1) EC private key"),
            (try #require(TestKeys.p256()).privateKeyPEM, .rs256, "private_key is not an RSA key of at least 2048 bits"),
        ]
        for (pem, algorithm, message) in cases {
            ERR_clear_error()
            let error = try #require(Self.failure(Self.load(pem, algorithm)))
            #expect(error == .wrongKeyType)
            #expect(error.message.contains(message), "\(error.message)")
            // The typed attempt failed before the general reader succeeded: its errors are gone.
            #expect(ERR_peek_error() == 0)
        }
    }

    @Test func encryptedAndMalformedKeysAreToldApart() throws {
        let encrypted = [
            try #require(TestKeys.encryptedPEM()), try #require(TestKeys.encryptedPEM(traditional: true)),
            "Proc-Type: 4,ENCRYPTED\n",
        ]
        for pem in encrypted {
            #expect(Self.failure(Self.load(pem, .es256)) == .encrypted, "\(pem.prefix(40))")
        }
        let body = try #require(TestKeys.p256()).privateKeyPEM.split(separator: "\n").dropFirst().dropLast().joined(separator: "\n")
        for pem in ["", "not a key", body, "-----BEGIN PRIVATE KEY-----\n" + body, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"] {
            let error = Self.failure(Self.load(pem, .es256))
            #expect(error == .malformed, "\(pem.prefix(40))")
            #expect(error?.message.contains("does not contain a PEM private key") == true)
            #expect(error?.message.contains(body.prefix(40)) == false)
        }
    }

    @Test func theArmourCheckFindsABoundaryAnywhere() {
        func holds(_ text: String) -> Bool { Array(text.utf8).withUnsafeBytes { JWTSigningKey.holdsPEMArmour($0) } }
        #expect(holds("-----BEGIN PRIVATE KEY-----"))
        #expect(holds("x-----BEGIN "))
        #expect(holds("----- ----BEGIN -----BEGIN "))
        #expect(!holds("-----BEGIN"))
        #expect(!holds("-----BEGINPRIVATE"))
        #expect(!holds("----BEGIN PRIVATE KEY-----"))
        #expect(!holds(""))
    }
}
