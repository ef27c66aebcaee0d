/// The Prometheus text exposition format (0.0.4), written once: the hub's
/// `PushPrometheusMetrics` and the relay's `/metrics` both render through it, so names are made
/// valid and label values escaped the same way everywhere (a label value is text from outside:
/// a provider's reason, a platform).
package struct PrometheusText: Sendable {
    package enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// One set of labels, rendered `a="x",b="y"` in the order given: each name made a valid
    /// label name, each value escaped (`\\`, `\"`, `\n`). Sorts and compares as that text.
    package struct Labels: Hashable, Comparable, Sendable {
        package let text: String

        package static let none = Labels([])

        package init(_ pairs: [(String, String)]) {
            text = pairs.map { name, value in PrometheusText.labelName(name) + "=\"" + PrometheusText.escaped(value) + "\"" }
                .joined(separator: ",")
        }

        private init(text: String) { self.text = text }

        /// These labels and one more after them (a histogram bucket's `le`).
        package func appending(_ name: String, _ value: String) -> Labels {
            let more = Labels([(name, value)])
            return Labels(text: text.isEmpty ? more.text : text + "," + more.text)
        }

        /// `{...}`, or nothing for no labels.
        var braced: String { text.isEmpty ? "" : "{\(text)}" }

        package static func < (a: Labels, b: Labels) -> Bool { a.text < b.text }
    }

    package private(set) var text = ""

    package init() {}

    /// Opens a metric family: its `# HELP` line (when there is help) and its `# TYPE` line.
    package mutating func family(_ name: String, _ kind: Kind, help: String? = nil) {
        if let help { text += "# HELP \(name) \(Self.escapedHelp(help))\n" }
        text += "# TYPE \(name) \(kind.rawValue)\n"
    }

    /// One sample, `name{labels} value`, with the value as already formatted.
    package mutating func sample(_ name: String, _ labels: Labels = .none, value: String) {
        text += "\(name)\(labels.braced) \(value)\n"
    }

    package mutating func sample(_ name: String, _ labels: Labels, _ value: some BinaryInteger) {
        sample(name, labels, value: "\(value)")
    }

    /// One sample without labels.
    package mutating func sample(_ name: String, _ value: some BinaryInteger) {
        sample(name, .none, value: "\(value)")
    }

    /// A histogram's samples: one `_bucket` per upper bound (with its cumulative count) and
    /// `+Inf`, then `_sum` (as already formatted) and `_count`.
    package mutating func histogram(
        _ name: String, _ labels: Labels = .none, bounds: [Double], cumulativeCounts: [Int], count: Int, sum: String
    ) {
        for (bound, bucket) in zip(bounds, cumulativeCounts) { sample(name + "_bucket", labels.appending("le", "\(bound)"), bucket) }
        sample(name + "_bucket", labels.appending("le", "+Inf"), count)
        sample(name + "_sum", labels, value: sum)
        sample(name + "_count", labels, count)
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`: anything else becomes `_`.
    package static func metricName(_ label: String) -> String {
        var name = ""
        for (index, scalar) in label.unicodeScalars.enumerated() {
            let letter = (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || scalar == "_" || scalar == ":"
            let digit = scalar >= "0" && scalar <= "9"
            name.unicodeScalars.append(letter || (digit && index > 0) ? scalar : "_")
        }
        return name.isEmpty ? "_" : name
    }

    /// A metric name without `:` (which label names may not contain).
    static func labelName(_ name: String) -> String {
        String(metricName(name).map { $0 == ":" ? "_" : $0 })
    }

    /// A label value: `\`, `"` and newline escaped. Scalar by scalar, not by `Character`: a
    /// `"` followed by a combining mark, or `\r\n`, is one `Character` that would slip past.
    static func escaped(_ value: String) -> String {
        var escaped = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped.append(contentsOf: #"\\"#.unicodeScalars)
            case "\"": escaped.append(contentsOf: #"\""#.unicodeScalars)
            case "\n": escaped.append(contentsOf: #"\n"#.unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    /// Help text: `\` and newline escaped (quotes stay as they are).
    static func escapedHelp(_ help: String) -> String {
        var escaped = String.UnicodeScalarView()
        for scalar in help.unicodeScalars {
            switch scalar {
            case "\\": escaped.append(contentsOf: #"\\"#.unicodeScalars)
            case "\n": escaped.append(contentsOf: #"\n"#.unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    /// A float as Prometheus reads it: whole numbers without a fraction, `NaN`, `±Inf`.
    package static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
