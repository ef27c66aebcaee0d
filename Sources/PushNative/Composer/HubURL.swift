/// `new URL(text).host` for the WebFetch glance line: the host (lowercased) with a non-default
/// port. A subset of WHATWG URL parsing: ASCII hosts only; a host with other characters (which
/// JavaScript would show in punycode) or a text that is not an absolute URL gives nil, and the
/// formatter then shows the URL itself, as JavaScript does when parsing fails.
enum HubURL {
    static let defaultPorts: [String: String] = ["http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"]

    static func host(of text: String) -> String? {
        // Leading and trailing C0 controls and spaces are stripped; tabs and newlines removed.
        var scalars = Array(text.unicodeScalars)
        while let first = scalars.first, first.value <= 0x20 { scalars.removeFirst() }
        while let last = scalars.last, last.value <= 0x20 { scalars.removeLast() }
        scalars.removeAll { $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let colon = scalars.firstIndex(of: ":"), colon > 0, isLetter(scalars[0]) else { return nil }
        let schemeScalars = scalars[..<colon]
        guard schemeScalars.allSatisfy({ isLetter($0) || ("0"..."9").contains($0) || $0 == "+" || $0 == "-" || $0 == "." }) else { return nil }
        let scheme = String(String.UnicodeScalarView(schemeScalars)).lowercased()
        var rest = scalars[(colon + 1)...]
        let special = defaultPorts[scheme] != nil
        if special {
            while let first = rest.first, first == "/" || first == "\\" { rest = rest.dropFirst() }
        } else {
            // Non-special (and file:) URLs have a host only after "//".
            guard rest.starts(with: ["/", "/"]) else { return "" }
            rest = rest.dropFirst(2)
        }
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" || (special && $0 == "\\") } ?? rest.endIndex
        var authority = rest[rest.startIndex..<end]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var hostPart = authority
        var portText = ""
        if authority.first == "[" {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            hostPart = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":" else { return nil }
                portText = String(String.UnicodeScalarView(after.dropFirst()))
            }
        } else if let separator = authority.lastIndex(of: ":") {
            hostPart = authority[..<separator]
            portText = String(String.UnicodeScalarView(authority[authority.index(after: separator)...]))
        }
        guard portText.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
        if !portText.isEmpty {
            let digits = portText.drop { $0 == "0" }
            guard digits.count <= 5, let number = Int(digits.isEmpty ? "0" : String(digits)), number <= 65535 else { return nil }
            portText = String(number)
        }
        guard hostPart.allSatisfy({ $0.isASCII && $0.value > 0x20 && !"<>^|%".unicodeScalars.contains($0) }) else { return nil }
        let host = String(String.UnicodeScalarView(hostPart)).lowercased()
        if special && host.isEmpty { return nil }
        if portText.isEmpty || portText == defaultPorts[scheme] { return host }
        return host + ":" + portText
    }

    private static func isLetter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }
}
