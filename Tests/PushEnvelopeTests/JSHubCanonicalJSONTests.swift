import Testing

@testable import PushCore
@testable import PushEnvelope

/// js-hub-behaviour.md §5: every verified example of the JavaScript hub's canonical JSON
/// (`JSON.stringify` of the recursively key-sorted object), byte for byte.
@Suite struct JSHubCanonicalJSONTests {
    struct Example: Sendable, CustomTestStringConvertible {
        let section: String
        let input: String
        let output: String
        var testDescription: String { section }
    }

    @Test(
        "§5.1–§5.3 and §5.5 canonical JSON",
        arguments: [
            // §5.1: array-index keys first, in numeric order; "10" after "2".
            Example(section: "§5.1 a", input: #"{"b":1,"10":1,"2":1,"a":1}"#, output: #"{"2":1,"10":1,"a":1,"b":1}"#),
            // §5.1: "01", "-1", "1.5", " 1" and "4294967295" are ordinary string keys.
            Example(
                section: "§5.1 b",
                input: #"{"1":"x","01":"y","-1":"z","1.5":"w","4294967294":"p","4294967295":"q","0":"r"," 1":"s"}"#,
                output: #"{"0":"r","1":"x","4294967294":"p"," 1":"s","-1":"z","01":"y","1.5":"w","4294967295":"q"}"#),
            // §5.2: keys that differ only by normalization are two keys, decomposed first.
            Example(
                section: "§5.2", input: #"{"\u00e9":"precomposed","e\u0301":"decomposed"}"#,
                output: "{\"e\u{301}\":\"decomposed\",\"\u{E9}\":\"precomposed\"}"),
            // §5.3: code-unit order: U+1F600 (D83D DE00) sorts below U+FF5E.
            Example(
                section: "§5.3", input: #"{"\uff5e":"fullwidth tilde","\ud83d\ude00":"emoji","z":"z","Z":"Z","_":"_"}"#,
                output: "{\"Z\":\"Z\",\"_\":\"_\",\"z\":\"z\",\"😀\":\"emoji\",\"～\":\"fullwidth tilde\"}"),
            // §5.5: the golden vector's plaintext.
            Example(
                section: "§5.5 golden", input: #"{"type":"ready","title":"HAPI","sessionId":"s1","contractVersion":"1","body":"Ready for input"}"#,
                output: #"{"body":"Ready for input","contractVersion":"1","sessionId":"s1","title":"HAPI","type":"ready"}"#),
            // §5.5: `__proto__` is dropped by the canonicalizer (assigning it sets the prototype).
            Example(section: "§5.5 __proto__", input: #"{"__proto__":{"x":1},"a":1}"#, output: #"{"a":1}"#),
            Example(section: "§5.5 nested __proto__", input: #"{"b":{"__proto__":5,"c":[{"__proto__":null}]}}"#, output: #"{"b":{"c":[{}]}}"#),
        ])
    func canonical(_ example: Example) throws {
        let value = try JSONParser.parse(example.input)
        #expect(value.canonicalString == example.output, "\(example.section)")
    }

    @Test("§5.2 output bytes") func normalizationDistinctKeyBytes() throws {
        let bytes = try JSONParser.parse(#"{"\u00e9":"precomposed","e\u0301":"decomposed"}"#).canonicalBytes
        #expect(Array(bytes.prefix(7)) == [0x7B, 0x22, 0x65, 0xCC, 0x81, 0x22, 0x3A])
        let second = Array(#",""#.utf8) + [0xC3, 0xA9, 0x22, 0x3A]
        #expect(bytes.indices.contains { Array(bytes[$0...].prefix(second.count)) == second })
        #expect(bytes.last == 0x7D)
    }

    @Test("§5.1 JSON.stringify enumeration order (not sorted)") func enumerationOrder() throws {
        // Object.entries / JSON.stringify of the parsed object: index keys ascending, then insertion order.
        let value = try JSONParser.parse(#"{"b":1,"10":1,"2":1,"a":1}"#)
        #expect(value.javaScriptString == #"{"2":1,"10":1,"b":1,"a":1}"#)
        #expect(JSONKey.enumerationOrder(try #require(value.objectValue)).map(\.key) == ["2", "10", "b", "a"])
        // `__proto__` parsed by JSON.parse is an own property: JSON.stringify writes it.
        #expect(try JSONParser.parse(#"{"__proto__":1,"a":2}"#).javaScriptString == #"{"__proto__":1,"a":2}"#)
    }

    @Test("§5.4 escaping") func escaping() throws {
        // JSON.stringify({s:"\u2028\u2029/\u007f\u0000\u001f\b\f\n\r\t\"\\\ud800\udfff"}) (the valid pair D800 DFFF)
        let value = try JSONParser.parse(#"{"s":"\u2028\u2029/\u007f\u0000\u001f\b\f\n\r\t\"\\\ud800\udfff"}"#)
        let expected: [UInt8] =
            Array(#"{"s":""#.utf8) + [0xE2, 0x80, 0xA8, 0xE2, 0x80, 0xA9] + Array("/".utf8) + [0x7F]
            + Array(#"\u0000\u001f\b\f\n\r\t\"\\"#.utf8) + Array("\u{103FF}".utf8) + Array(#""}"#.utf8)
        #expect(value.canonicalBytes == expected)
        #expect(CanonicalJSON.javaScriptBytes(value) == expected)
    }

    @Test("§5.4 lone surrogates (deliberate difference)") func loneSurrogates() throws {
        // JavaScript writes the lone \udc00\ud800 as escapes; a Swift string cannot hold them, so
        // every parse (strict numbers or not) reads each as U+FFFD.
        let text = #"{"s":"a\udc00\ud800b"}"#
        #expect(try JSONParser.parse(text)["s"] == "a\u{FFFD}\u{FFFD}b")
        #expect(try JSONParser.parse(Array(text.utf8), overflowingToInfinity: true)["s"] == "a\u{FFFD}\u{FFFD}b")
        #expect(try JSONParser.parse(Array(#""\ud83d\ude00\ud83d""#.utf8)) == "😀\u{FFFD}")
        #expect(try JSONParser.parse(Array(#""\ud83d\u0041""#.utf8)) == "\u{FFFD}A")
    }

    @Test(
        "§5.4 numbers",
        arguments: [
            ("1.0", "1"), ("-0", "0"), ("-0.0", "0"), ("1e21", "1e+21"), ("1e-7", "1e-7"), ("0.30000000000000004", "0.30000000000000004"),
            ("5e-324", "5e-324"), ("12345678901234567890", "12345678901234567000"),
        ])
    func numbers(_ input: String, _ output: String) throws {
        #expect(try JSONParser.parse(input).canonicalString == output)
    }

    @Test("§5.4 0.1 + 0.2") func sumPrintsShortestDigits() {
        #expect(JSONValue.double(0.1 + 0.2).canonicalString == "0.30000000000000004")
    }

    @Test("keys are ordered by UTF-16 code units for every pair of scalar ranges") func codeUnitOrderMatchesUTF16() {
        let samples = ["", "a", "Z", "~", "\u{7F}", "é", "\u{7FF}", "\u{800}", "\u{D7FF}", "\u{E000}", "\u{FF5E}", "\u{FFFF}", "\u{10000}", "😀", "\u{10FFFF}", "a😀", "a\u{E000}", "ab"]
        for a in samples {
            for b in samples {
                #expect(JSONKey.codeUnitOrder(a, b) == a.utf16.lexicographicallyPrecedes(b.utf16), "\(Array(a.unicodeScalars)) < \(Array(b.unicodeScalars))")
            }
        }
    }

    @Test("array-index keys") func arrayIndexKeys() {
        #expect(JSONKey.arrayIndex("0") == 0)
        #expect(JSONKey.arrayIndex("4294967294") == 4_294_967_294)
        for key in ["", "01", "-1", "1.5", " 1", "4294967295", "99999999999", "1a", "+1"] { #expect(JSONKey.arrayIndex(key) == nil, "\(key)") }
    }

    @Test("a list holding a key twice is written once, with its last value") func duplicatesInAList() {
        let value = JSONValue.object([(key: "b", value: 1), (key: "a", value: 2), (key: "b", value: 3)])
        #expect(value.canonicalString == #"{"a":2,"b":3}"#)
        #expect(value.javaScriptString == #"{"b":3,"a":2}"#)
        #expect(value["b"] == 3)
    }

    @Test("large objects keep exact keys") func largeObjects() throws {
        var text = "{"
        for i in 0..<40 { text += "\"k\(i)\":\(i)," }
        text += "\"caf\\u00e9\":1,\"cafe\\u0301\":2,\"k3\":99}"
        let value = try JSONParser.parse(text)
        #expect(value.objectValue?.count == 42)
        #expect(value["k3"] == 99)
        #expect(value.objectValue?[3].key == "k3")
        #expect(value["caf\u{E9}"] == 1)
        #expect(value["cafe\u{301}"] == 2)
    }
}
