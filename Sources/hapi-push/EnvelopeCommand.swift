import Foundation
import PushEnvelope
import PushNative

/// `hapi-push envelope seal|open`: the envelope by hand, for checking interop with a device.
enum EnvelopeCommand {
    static let usage = """
        Usage:
          hapi-push envelope seal --key B64 [--nonce-hex HEX] (--plaintext TEXT | --payload-file FILE)
          hapi-push envelope open --key B64 --envelope B64

        seal   Encrypts with AES-256-GCM (AAD "hapi-push-v1") and prints base64(nonce|ciphertext|tag).
               --payload-file reads a JSON object and seals its canonical JSON (sorted keys, no
               whitespace), byte-identical to the JavaScript hub. --nonce-hex (24 hex digits) fixes
               the nonce for test vectors only; without it every seal uses a fresh random nonce.
        open   Verifies and decrypts an envelope as a device does and prints the plaintext.
        """

    static func run(_ arguments: [String]) throws -> Int32 {
        guard let (sub, rest) = try splitSubcommand(arguments, usage: usage, command: "envelope") else { return ExitCode.success.rawValue }
        switch sub {
        case "seal": return try seal(rest)
        case "open": return try open(rest)
        default: throw UsageError("unknown envelope command '\(sub)' (expected seal or open)")
        }
    }

    private static func parseKey(_ text: String) throws -> PushKey {
        do {
            return try PushKey(base64: text)
        } catch {
            throw UsageError("--key: \(error.description)")
        }
    }

    private static func seal(_ arguments: [String]) throws -> Int32 {
        let args = try ParsedArguments(arguments, valueFlags: ["key", "nonce-hex", "plaintext", "payload-file"])
        guard args.positionals.isEmpty else { throw UsageError("unexpected argument '\(args.positionals[0])'") }
        let key = try parseKey(try args.required("key"))
        let plaintext: [UInt8]
        switch (args.value("plaintext"), args.value("payload-file")) {
        case (let text?, nil):
            plaintext = Array(text.utf8)
        case (nil, let path?):
            plaintext = try canonicalPayload(fromFile: path)
        case (.some, .some):
            throw UsageError("give either --plaintext or --payload-file, not both")
        case (nil, nil):
            throw UsageError("missing --plaintext or --payload-file")
        }
        let envelope: String
        if let nonceHex = args.value("nonce-hex") {
            guard nonceHex.utf8.count == 24, let nonce = Digest.bytes(fromHex: nonceHex) else {
                throw UsageError("--nonce-hex must be exactly 24 hex digits (12 bytes)")
            }
            envelope = try PushEnvelopeCipher.seal(plaintext, key: key, testVectorNonce: nonce)
        } else {
            envelope = try PushEnvelopeCipher.seal(plaintext, key: key)
        }
        print(envelope)
        return ExitCode.success.rawValue
    }

    private static func canonicalPayload(fromFile path: String) throws -> [UInt8] {
        // Bounded (1 MiB), like every file the CLI reads.
        let data = try InputFile.read(path, option: "payload-file")
        let value: JSONValue
        do {
            value = try JSONParser.parse(data)
        } catch {
            throw UsageError("--payload-file: '\(path)' is not JSON: \(error.description)")
        }
        guard value.objectValue != nil else {
            throw UsageError("--payload-file: '\(path)' must hold a JSON object, not \(value.typeName)")
        }
        return value.canonicalBytes
    }

    private static func open(_ arguments: [String]) throws -> Int32 {
        let args = try ParsedArguments(arguments, valueFlags: ["key", "envelope"])
        guard args.positionals.isEmpty else { throw UsageError("unexpected argument '\(args.positionals[0])'") }
        let key = try parseKey(try args.required("key"))
        let envelope = try args.required("envelope")
        let plaintext: [UInt8]
        do {
            plaintext = try PushEnvelopeCipher.open(envelope, key: key)
        } catch {
            throw UsageError("--envelope: \(error.message)")
        }
        print(String(decoding: plaintext, as: UTF8.self))
        return ExitCode.success.rawValue
    }
}
