extension Duration {
    /// Whole milliseconds (truncated), as every log line, report and `--json` of the hub and the
    /// relay prints a latency: written once so the two cannot round differently.
    package var reportedMilliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
