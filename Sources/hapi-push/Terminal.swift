import PushEnvelope

/// What the CLI prints, made safe for a terminal with the library's one sanitizer
/// (`SafeText.sanitize`): device ids come from remote devices, reasons from providers, values
/// from the environment, and any of them may hold ESC, BEL, CR/LF or C1 controls that would
/// forge lines or run escape sequences in the operator's terminal.
enum Terminal {
    /// One line of text: controls escaped (`\x1B`, `\n`…), at most 4096 characters.
    static func line(_ text: some StringProtocol) -> String {
        SafeText.sanitize(text, limit: 4096)
    }

    /// A JSON value as one line, with DEL, C1 and bidi controls escaped as `\uXXXX` too (JSON
    /// escapes C0 itself): the same value for a parser, inert in a terminal.
    static func json(_ value: JSONValue) -> String {
        SafeText.terminalJSON(value.canonicalString)
    }

    /// JSON text we produced, escaped the same way.
    static func jsonText(_ text: String) -> String {
        SafeText.terminalJSON(text)
    }
}
