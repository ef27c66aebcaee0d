import PushNative
import Testing

/// Issue 27 item 7: the README says a lone surrogate in input is read as U+FFFD, and a hub that
/// parses its stored JSON with the public API gets that reading, not an error.
@Suite struct PublicJSONParsingTests {
    @Test func aLoneSurrogateIsReadAsTheReplacementCharacter() throws {
        let text = #"{"name":"a\ud800b","pair":"\ud83d\ude00","tail":"\ud83d\u0041","low":"\udc00"}"#
        let value = try PushJSONValue(parsing: text)
        #expect(value["name"]?.stringValue == "a\u{FFFD}b")
        #expect(value["pair"]?.stringValue == "😀")
        #expect(value["tail"]?.stringValue == "\u{FFFD}A")
        #expect(value["low"]?.stringValue == "\u{FFFD}")
        #expect(try PushJSONValue(parsing: Array(#""\ud800""#.utf8)) == PushJSONValue.string("\u{FFFD}"))
    }

    @Test func everythingElseIsStillRefused() {
        for text in [#""\ud8""#, #""\x""#, "[1,]", "\"\u{01}\""] {
            #expect(throws: PushJSONParseError.self) { try PushJSONValue(parsing: text) }
        }
    }
}
