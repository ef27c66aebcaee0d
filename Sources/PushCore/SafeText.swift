/// The one sanitizer for text that came from outside and is about to be shown or kept: device
/// ids printed by the CLI, provider answers (the relay's `code`, APNs `reason`, FCM `errorCode`,
/// `status` and `message`, OAuth `error`) before they become a delivery's reason or a log line.
///
/// Why: a device id or a provider message holding ESC, BEL, CR/LF or C1 controls would let a
/// remote party forge lines or run terminal escape sequences in an operator's terminal or log;
/// an unbounded provider message (3 KB seen) would fill logs; a provider echoing our request
/// would put a device token or a bearer token into a reason that is printed and logged.
package enum SafeText {
    /// What replaces a secret or a token-like run.
    package static let redacted = "[redacted]"

    /// `text` made safe to print on one line:
    /// - control characters (C0 including TAB, CR and LF, DEL, C1) and the characters that
    ///   reorder or break lines (bidi overrides and isolates, U+2028/U+2029) are escaped as
    ///   `\n`, `\r`, `\t`, `\xHH` or `\u{HHHH}`, so nothing reaches a terminal as a control;
    /// - with `redactingTokens`, every exact occurrence of `secrets` (what we sent: a device
    ///   token, a JWT, an access token) and every run that looks like a token (16 or more hex
    ///   digits in a row, or 32 or more characters of the token alphabet with a digit among
    ///   them) becomes `[redacted]`;
    /// - with `codeOnly`, only letters, digits, `_`, `-` and `.` are kept (for a `key=value`
    ///   log field);
    /// - at most `limit` characters are kept (counted after escaping), then `…`.
    package static func sanitize(
        _ text: some StringProtocol, limit: Int = 1024, redactingTokens: Bool = false, secrets: [String] = [], codeOnly: Bool = false
    ) -> String {
        var source = String(text)
        if redactingTokens {
            for secret in secrets where secret.unicodeScalars.count >= 4 {
                source = replacingOccurrences(of: secret, in: source)
            }
            source = redactingTokenRuns(source)
        }
        var out = String.UnicodeScalarView()
        var count = 0
        let budget = max(0, limit)
        for scalar in source.unicodeScalars {
            if codeOnly {
                guard isCodeScalar(scalar) else { continue }
                guard count < budget else { return String(out) }
                out.append(scalar)
                count += 1
                continue
            }
            let piece = escape(scalar)
            guard count + piece.count <= budget else {
                out.append("…")
                return String(out)
            }
            out.append(contentsOf: piece)
            count += piece.count
        }
        return String(out)
    }

    /// JSON text (ours, already valid) with DEL, C1 controls and the line-breaking and bidi
    /// characters written as `\uXXXX` escapes: the same JSON value, but nothing in it acts on a
    /// terminal. (JSON escapes C0 itself.) Those characters can only occur inside strings, so
    /// the replacement is always valid JSON.
    package static func terminalJSON(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: needsEscape) else { return json }
        var out = String.UnicodeScalarView()
        for scalar in json.unicodeScalars {
            if needsEscape(scalar) {
                out.append(contentsOf: ("\\u" + hex(scalar.value, width: 4)).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// Whether a scalar is escaped by `sanitize` (a control or a line/bidi formatting character).
    package static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: return true
        default: return false
        }
    }

    private static func escape(_ scalar: Unicode.Scalar) -> [Unicode.Scalar] {
        guard needsEscape(scalar) else { return [scalar] }
        let text: String
        switch scalar {
        case "\n": text = "\\n"
        case "\r": text = "\\r"
        case "\t": text = "\\t"
        default: text = scalar.value <= 0xFF ? "\\x" + hex(scalar.value, width: 2) : "\\u{" + hex(scalar.value, width: 4) + "}"
        }
        return Array(text.unicodeScalars)
    }

    private static func hex(_ value: UInt32, width: Int) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    private static func isCodeScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", "_", "-", ".": return true
        default: return false
        }
    }

    /// Characters tokens are made of: FCM tokens (`[A-Za-z0-9_:-]`), APNs tokens (hex), JWTs
    /// and OAuth tokens (base64url and dots), base64 envelopes (`+/=`).
    private static func isTokenScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9", "_", "-", ".", ":", "~", "+", "/", "=": return true
        default: return false
        }
    }

    private static func isHexScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "0"..."9", "a"..."f", "A"..."F": return true
        default: return false
        }
    }

    /// Replaces every maximal token-alphabet run that looks like a token.
    private static func redactingTokenRuns(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            guard isTokenScalar(scalars[index]) else {
                out.append(scalars[index])
                index += 1
                continue
            }
            var end = index
            var hasDigit = false
            var hexRun = 0
            var longestHexRun = 0
            while end < scalars.count, isTokenScalar(scalars[end]) {
                let scalar = scalars[end]
                if ("0"..."9").contains(scalar) { hasDigit = true }
                hexRun = isHexScalar(scalar) ? hexRun + 1 : 0
                longestHexRun = max(longestHexRun, hexRun)
                end += 1
            }
            let run = scalars[index..<end]
            if longestHexRun >= 16 || (run.count >= 32 && hasDigit) {
                out.append(contentsOf: redacted.unicodeScalars)
            } else {
                out.append(contentsOf: run)
            }
            index = end
        }
        return String(out)
    }

    private static func replacingOccurrences(of needle: String, in haystack: String) -> String {
        let target = Array(needle.unicodeScalars)
        let scalars = Array(haystack.unicodeScalars)
        guard !target.isEmpty, scalars.count >= target.count else { return haystack }
        var out = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            if index + target.count <= scalars.count, scalars[index] == target[0],
                scalars[index..<(index + target.count)].elementsEqual(target)
            {
                out.append(contentsOf: redacted.unicodeScalars)
                index += target.count
            } else {
                out.append(scalars[index])
                index += 1
            }
        }
        return String(out)
    }
}
