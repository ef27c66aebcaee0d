import Testing

@testable import PushCore
@testable import PushEnvelope

@Suite struct CanonicalJSONTests {
    @Test func sortsASCIIKeys() {
        let value: JSONValue = ["type": "ready", "body": "b", "Z": 1, "a": 2, "_": 3, "sessionId": "s"]
        #expect(value.canonicalString == #"{"Z":1,"_":3,"a":2,"body":"b","sessionId":"s","type":"ready"}"#)
    }

    @Test func sortsNonASCIIKeysByUTF16CodeUnits() {
        // U+1D49C (𝒜) is D835 DC9C in UTF-16, so it sorts before U+FF61 (｡) in JavaScript,
        // although its scalar value is larger: byte or scalar order would get this wrong.
        let astral = "\u{1D49C}"
        let halfwidth = "\u{FF61}"
        #expect(CanonicalJSON.jsKeyOrder(astral, halfwidth))
        #expect(!(astral.unicodeScalars.first!.value < halfwidth.unicodeScalars.first!.value))
        let value: JSONValue = .object([halfwidth: 1, astral: 2, "é": 3, "z": 4, "😀": 5])
        #expect(value.canonicalString == "{\"z\":4,\"é\":3,\"\(astral)\":2,\"😀\":5,\"\(halfwidth)\":1}")
    }

    @Test func sortsComposedAndDecomposedKeysAsDistinctCodeUnits() {
        // "é" precomposed (00E9) and "e\u{301}" are equal Swift Strings but different JS keys;
        // here only distinct-by-code-unit keys are compared.
        #expect(CanonicalJSON.jsKeyOrder("e\u{301}", "\u{E9}"))
        #expect(!CanonicalJSON.jsKeyOrder("\u{E9}", "e\u{301}"))
    }

    @Test func escapesExactlyAsJSONStringify() {
        let cases: [(String, String)] = [
            ("\"", #""\"""#), ("\\", #""\\""#), ("\u{08}", #""\b""#), ("\u{0C}", #""\f""#), ("\n", #""\n""#),
            ("\r", #""\r""#), ("\t", #""\t""#), ("\u{00}", #""\u0000""#), ("\u{01}", #""\u0001""#),
            ("\u{1F}", #""\u001f""#), ("\u{1B}", #""\u001b""#), ("/", #""/""#), ("\u{7F}", "\"\u{7F}\""),
            ("\u{2028}\u{2029}", "\"\u{2028}\u{2029}\""), ("é😀", "\"é😀\""), ("a b", #""a b""#),
        ]
        for (input, expected) in cases {
            #expect(JSONValue.string(input).canonicalString == expected, "escaping \(Array(input.unicodeScalars))")
        }
    }

    @Test func nestsAndSortsRecursively() {
        let value: JSONValue = ["b": ["y": [["d": 1, "c": 2]], "x": true], "a": [3, "s", nil, false]]
        #expect(value.canonicalString == #"{"a":[3,"s",null,false],"b":{"x":true,"y":[{"c":2,"d":1}]}}"#)
    }

    @Test func writesIntegersWithoutAFraction() {
        #expect(JSONValue.integer(10).canonicalString == "10")
        #expect(JSONValue.integer(-3).canonicalString == "-3")
        #expect(JSONValue.double(10.0).canonicalString == "10")
        #expect(JSONValue.double(1.5).canonicalString == "1.5")
        #expect(JSONValue.double(-0.0).canonicalString == "0")
        #expect(JSONValue.double(1e21).canonicalString == "1e+21")
        #expect(JSONValue.double(1e-7).canonicalString == "1e-7")
        #expect(JSONValue.double(0.000001).canonicalString == "0.000001")
        #expect(JSONValue.double(123456789012345680000.0).canonicalString == "123456789012345680000")
        #expect(JSONValue.double(.nan).canonicalString == "null")
    }

    @Test func omitsAbsentOptionalFields() {
        let payload = PushNotificationPayload(type: .ready, sessionId: "s1", title: "HAPI", body: "b")
        let text = String(decoding: payload.canonicalJSON, as: UTF8.self)
        #expect(text == #"{"body":"b","contractVersion":"1","sessionId":"s1","title":"HAPI","type":"ready"}"#)
        #expect(!text.contains("null"))
        let full = PushNotificationPayload(
            type: .permissionRequest, sessionId: "s", sessionName: "n", url: "/u", requestId: "r", title: "t", body: "b",
            severity: .warning, notifySummary: "{}")
        #expect(
            String(decoding: full.canonicalJSON, as: UTF8.self)
                == #"{"body":"b","contractVersion":"1","notifySummary":"{}","requestId":"r","sessionId":"s","sessionName":"n","severity":"warning","title":"t","type":"permission-request","url":"/u"}"#
        )
    }
}

@Suite struct JSONParserTests {
    @Test func roundTripsThroughTheSerializer() throws {
        let texts = [
            #"{"a":[1,2.5,-3,true,false,null,"x\n\u0001é😀"],"b":{"c":{}},"d":[]}"#, #""\u2028""#, "0", "-1.25", "[[[]]]",
        ]
        for text in texts {
            let value = try JSONParser.parse(text)
            let serialized = value.canonicalString
            #expect(try JSONParser.parse(serialized) == value)
            #expect(try JSONParser.parse(serialized).canonicalString == serialized)
        }
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        #expect(try JSONParser.parse(#""\ud83d\ude00 \u00e9 \/""#) == .string("😀 é /"))
    }

    @Test func lastDuplicateKeyWins() throws {
        #expect(try JSONParser.parse(#"{"a":1,"a":2}"#) == ["a": 2])
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":}", "{a:1}", "01", "1.", ".5", "+1", "\"\u{01}\"", "\"\\x\"", "nul", "[] x", "1e",
        "\"abc", "{\"a\" 1}", "[1 2]",
    ])
    func rejectsInvalidJSON(_ text: String) {
        #expect(throws: PushJSONParseError.self) { try JSONParser.parse(text) }
    }

    @Test func rejectsDeepNestingInsteadOfOverflowingTheStack() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: PushJSONParseError.self) { try JSONParser.parse(deep) }
        let ok = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        #expect(throws: Never.self) { try JSONParser.parse(ok) }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: PushJSONParseError.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
    }
}

@Suite struct JavaScriptNumberAndKeyTests {
    @Test func integersBeyond2To53PrintAsJavaScriptDoes() throws {
        // JSON.stringify(2 ** 60) === "1152921504606847000"
        #expect(try JSONParser.parse("1152921504606846976").canonicalString == "1152921504606847000")
        #expect(JSONValue.integer(1 << 60).canonicalString == "1152921504606847000")
        #expect(JSONValue.double(1152921504606846976).canonicalString == "1152921504606847000")
        // 2^53 itself is exact.
        #expect(try JSONParser.parse("9007199254740992").canonicalString == "9007199254740992")
        #expect(try JSONParser.parse("9007199254740992") == .integer(9_007_199_254_740_992))
        for text in ["1152921504606846976", "9.21e18", "[92233720368534362e2]", "-9007199254740993"] {
            let value = try JSONParser.parse(text)
            #expect(try JSONParser.parse(value.canonicalString) == value, "\(text)")
        }
    }

    @Test func membersAreLookedUpByExactBytes() throws {
        // "K" (U+212A KELVIN SIGN) is canonically equivalent to "K": Swift's == matches it, JavaScript does not.
        let body = try JSONParser.parse("{\"push\u{212A}ey\":\"x\",\"caf\u{E9}\":1}")
        #expect(body["pushKey"] == nil)
        #expect(body["push\u{212A}ey"] == "x")
        #expect(body["cafe\u{301}"] == nil)
        #expect(body["caf\u{E9}"] == 1)
    }

    @Test func equivalentButDifferentKeysStayTwoMembers() throws {
        // JavaScript keeps both keys (it compares code units); so do we, in code-unit order.
        let two = try JSONParser.parse("{\"caf\u{E9}\":1,\"cafe\u{301}\":2}")
        #expect(two.objectValue?.count == 2)
        #expect(two["caf\u{E9}"] == 1)
        #expect(two["cafe\u{301}"] == 2)
        #expect(two.canonicalString == "{\"cafe\u{301}\":2,\"caf\u{E9}\":1}")
        // The same key twice is one member: the last value, at the first position.
        let one = try JSONParser.parse("{\"caf\u{E9}\":1,\"b\":0,\"caf\u{E9}\":2}")
        #expect(one.objectValue?.map(\.key) == ["caf\u{E9}", "b"])
        #expect(one["caf\u{E9}"] == 2)
        // Equal values compare keys exactly too.
        #expect(two != JSONValue.object([(key: "caf\u{E9}", value: 1), (key: "caf\u{E9}", value: 2)]))
        #expect(JSONValue.string("caf\u{E9}") != JSONValue.string("cafe\u{301}"))
    }
}
