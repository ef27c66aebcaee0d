import Testing

import PushEnvelope

/// Inputs on which a fuzz target in Tests/Fuzz (`make fuzz`) once failed, each checked with the
/// same property as its harness, so a fixed bug stays fixed.
@Suite struct FuzzRegressionTests {
    /// FuzzJSON: whatever parses survives the canonical serializer, parse(serialize(x)) == x, and
    /// serializing again gives the same bytes.
    ///
    /// An integral number of at least 9.2e18 but below 2^63 written with a fraction or exponent
    /// parsed as `.double`; its canonical form has no fraction, so it came back as `.integer`
    /// (with other digits when the shortest form is not the exact value).
    @Test(arguments: [
        "9.21e18",
        "[9223327203685758083.2]",  // fuzz crash-71f0bcce, minimized
        "[92233720368534362e2]",  // fuzz crash-0641e209, minimized
        "-9.223372036853436e18",
    ])
    func jsonSurvivesCanonicalSerialization(_ text: String) throws {
        let value = try JSONParser.parse(text)
        let serialized = value.canonicalBytes
        let reparsed = try JSONParser.parse(serialized)
        #expect(reparsed == value, "\(text) became \(String(decoding: serialized, as: UTF8.self))")
        #expect(reparsed.canonicalBytes == serialized)
    }
}
