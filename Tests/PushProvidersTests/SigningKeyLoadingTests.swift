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
            // What `openssl ecparam -genkey` writes: the curve's block, then the key.
            (Self.ecParameters + (try #require(TestKeys.traditionalPEM())), .es256),
            // Another block first: the general reader skips it.
            (try #require(TestKeys.p256()).publicKeyPEM + (try #require(TestKeys.p256()).privateKeyPEM), .es256),
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
        let publicOnly = try #require(TestKeys.p256()).publicKeyPEM
        for pem in [
            "", "not a key", body, "-----BEGIN PRIVATE KEY-----\n" + body, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", publicOnly,
            Self.ecParameters,
        ] {
            let error = Self.failure(Self.load(pem, .es256))
            #expect(error == .malformed, "\(pem.prefix(40))")
            #expect(error?.message.contains("does not contain a PEM private key") == true)
            #expect(error?.message.contains(body.prefix(40)) == false)
        }
    }

    /// The P-256 curve's `EC PARAMETERS` block (its OID).
    static let ecParameters = "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"

    /// The typed reader alone: the wanted type's private key or nothing, a pass phrase asked of
    /// our callback only, its own errors dropped and those queued before kept.
    @Test func theTypedReaderReadsOnlyAPrivateKeyOfItsType() throws {
        func read(_ pem: String, _ type: String, _ parameter: String) -> (found: Bool, asked: Int32) {
            var asked: Int32 = 0
            let key = Array(pem.utf8).withUnsafeBufferPointer { hapi_pem_read_private_key_of_type_no_prompt($0.baseAddress, $0.count, type, parameter, &asked) }
            defer { EVP_PKEY_free(key) }
            return (key != nil, asked)
        }
        let p256 = try #require(TestKeys.p256())
        let rsa = try #require(TestKeys.rsa2048())
        let cases: [(String, String, String, Bool)] = [
            (p256.privateKeyPEM, "EC", "priv", true), (try #require(TestKeys.traditionalPEM()), "EC", "priv", true),
            (rsa.privateKeyPEM, "RSA", "d", true), (try #require(TestKeys.traditionalPEM(rsa: true)), "RSA", "d", true),
            (rsa.privateKeyPEM, "EC", "priv", false), (p256.privateKeyPEM, "RSA", "d", false),
            (p256.publicKeyPEM, "EC", "priv", false), (try #require(TestKeys.p384()).publicKeyPEM, "EC", "priv", false),
            ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "EC", "priv", false),
        ]
        for (pem, type, parameter, found) in cases {
            ERR_clear_error()
            let result = read(pem, type, parameter)
            #expect(result.found == found, "\(type) \(pem.prefix(30))")
            #expect(result.asked == 0)
            #expect(ERR_peek_error() == 0, "\(type) \(pem.prefix(30))")
        }
        ERR_clear_error()
        let encrypted = read(try #require(TestKeys.encryptedPEM()), "EC", "priv")
        #expect(!encrypted.found)
        #expect(encrypted.asked == 1)
        #expect(ERR_peek_error() == 0)
        // An error the caller had queued before (a file that is not there) is still there after.
        #expect(BIO_new_file("/nonexistent/hapi-push-test", "r") == nil)
        let (first, last) = (ERR_peek_error(), ERR_peek_last_error())
        #expect(first != 0)
        #expect(read(p256.privateKeyPEM, "EC", "priv").found)
        #expect(read(rsa.privateKeyPEM, "EC", "priv").found == false)
        #expect(ERR_peek_error() == first)
        #expect(ERR_peek_last_error() == last)
        ERR_clear_error()
    }

    @Test func theArmourCheckFindsABoundaryAnywhere() {
        func holds(_ text: String) -> Bool { Array(text.utf8).withUnsafeBytes { JWTSigningKey.holdsPEMArmour($0) } }
        #expect(holds("-----BEGIN PRIVATE KEY-----"))
        #expect(holds("x-----BEGIN "))
        #expect(holds("----- ----BEGIN -----BEGIN "))
        #expect(holds("------BEGIN "))
        #expect(!holds("-----BEGIN"))
        #expect(!holds("-----BEGINPRIVATE"))
        #expect(!holds("----BEGIN PRIVATE KEY-----"))
        #expect(!holds(""))
    }
}
