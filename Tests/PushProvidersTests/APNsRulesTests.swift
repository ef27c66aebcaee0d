import Testing

@testable import PushProviders

/// Issue 27 item 3: one APNs device-token rule and one collapse-id cut, in the provider layer,
/// used by the hub (registration, APNs, relay client) and the relay.
@Suite struct APNsDeviceTokenRuleTests {
    static func hex(_ digits: Int) -> String { String(String(repeating: "0123456789abcdef", count: digits / 16 + 1).prefix(digits)) }

    @Test(arguments: [
        (15, APNsDeviceToken.Flaw.oddLength(15)), (17, .oddLength(17)), (513, .oddLength(513)), (0, .outOfRange(0)), (14, .outOfRange(14)),
        (514, .outOfRange(514)),
    ])
    func lengthsOutsideTheRuleAreRefused(_ digits: Int, _ flaw: APNsDeviceToken.Flaw) {
        #expect(APNsDeviceToken.flaw(Self.hex(digits)) == flaw)
        #expect(!APNsDeviceToken.isWellFormed(Self.hex(digits)))
    }

    @Test(arguments: [16, 18, 64, 200, 510, 512])
    func evenLengthsFrom16To512AreAccepted(_ digits: Int) {
        #expect(APNsDeviceToken.flaw(Self.hex(digits)) == nil)
    }

    @Test func caseAndCharacters() {
        #expect(APNsDeviceToken.isWellFormed(String(repeating: "AB", count: 32)))  // uppercase: the hub stores it lowercase
        #expect(APNsDeviceToken.isWellFormed(String(repeating: "aB", count: 8)))
        for bad in [String(repeating: "g", count: 64), String(repeating: "a", count: 63) + " ", "../../" + Self.hex(58), Self.hex(62) + "é"] {
            #expect(APNsDeviceToken.flaw(bad) == .notHex, "\(bad)")
        }
    }
}

@Suite struct APNsCollapseIdCutTests {
    @Test(arguments: [
        ("ready-s1", "ready-s1"), (String(repeating: "a", count: 64), String(repeating: "a", count: 64)),
        (String(repeating: "a", count: 70), String(repeating: "a", count: 64)),
        // 2-byte é: 6 + 29 × 2 = 64.
        ("ready-" + String(repeating: "é", count: 40), "ready-" + String(repeating: "é", count: 29)),
        // 4-byte emoji: 6 + 14 × 4 = 62, never half of the 15th.
        ("ready-" + String(repeating: "😀", count: 20), "ready-" + String(repeating: "😀", count: 14)),
        // 3-byte scalars straddling byte 64: 1 + 21 × 3 = 64 exactly.
        ("x" + String(repeating: "€", count: 30), "x" + String(repeating: "€", count: 21)),
    ])
    func cutsUTF8BytesOnAScalarBoundary(_ id: String, _ cut: String) {
        #expect(APNsCollapseId.cut(id) == cut)
        #expect(APNsCollapseId.cut(id).utf8.count <= APNsCollapseId.maximumBytes)
    }

    /// A grapheme cluster at the boundary is cut between its scalars, as the official relay
    /// cuts (a cut by Character would drop the whole cluster).
    @Test func aGraphemeClusterAtTheBoundaryIsCutBetweenItsScalars() {
        let combining = String(repeating: "a", count: 63) + "e\u{301}"  // 65 bytes, 64 Characters
        #expect(APNsCollapseId.cut(combining).unicodeScalars.elementsEqual((String(repeating: "a", count: 63) + "e").unicodeScalars))
        let family = String(repeating: "a", count: 56) + "👨\u{200D}👩"  // 56 + 4 + 3 + 4 = 67 bytes
        #expect(APNsCollapseId.cut(family).unicodeScalars.elementsEqual((String(repeating: "a", count: 56) + "👨\u{200D}").unicodeScalars))
        #expect(APNsCollapseId.cut(family).utf8.count == 63)
    }

    /// Every path applies it: the hub's APNs request and its relay request.
    @Test func theRequestBuildersCut() {
        let long = String(repeating: "é", count: 40)
        let apns = APNsProvider.request(token: String(repeating: "ab", count: 32), envelope: "QQ==", topic: "t", jwt: "J", priority: 10, collapseId: long)
        #expect(apns.header("apns-collapse-id") == String(repeating: "é", count: 32))
        let relay = RelayProvider.body(platform: .ios, token: "ab", envelope: "QQ==", collapseId: long, priority: 10)
        #expect(String(decoding: relay, as: UTF8.self).contains(#""collapseId":""# + String(repeating: "é", count: 32) + #"""#))
    }
}
