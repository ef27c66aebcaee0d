import Testing

@testable import DeviceRegistry
@testable import PushEnvelope

/// What every `PushDeviceStore` must do, run against SQLite, PostgreSQL and in-memory alike.
@Suite struct DeviceStoreBehaviourTests {
    @Test(arguments: StoreKind.allCases)
    func upsertInsertsThenReplacesKeepingCreatedAt(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        let first = try await store.upsert(try request(token: "t-1", key: keyA), now: 1000)
        #expect(first.createdAt == 1000 && first.updatedAt == 1000)
        let second = try await store.upsert(try request(token: "t-2", key: keyB), now: 2000)
        #expect(second.createdAt == 1000)
        #expect(second.updatedAt == 2000)
        let devices = try await store.devices(namespace: "ns")
        #expect(devices.count == 1)
        #expect(devices.first?.token == "t-2")
        #expect(devices.first?.pushKey?.base64 == keyB)
        #expect(devices.first?.createdAt == 1000)
        #expect(devices.first?.updatedAt == 2000)
    }

    @Test(arguments: StoreKind.allCases)
    func sameDeviceIdOnAnotherPlatformIsAnotherRow(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        _ = try await store.upsert(try request(platform: "phone", token: "p"), now: 1)
        _ = try await store.upsert(try request(platform: "wear", token: "w"), now: 2)
        _ = try await store.upsert(try request(platform: "ios", token: iosToken, key: keyA), now: 3)
        let devices = try await store.devices(namespace: "ns")
        #expect(devices.map(\.platform) == [.ios, .wear, .phone])
    }

    @Test(arguments: StoreKind.allCases)
    func oneTokenIsNeverInTwoRows(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        // Same token moves to a new namespace (re-pairing): the old row goes.
        _ = try await store.upsert(try request("old-ns", token: "shared"), now: 1)
        _ = try await store.upsert(try request("new-ns", token: "shared"), now: 2)
        #expect(try await store.devices(namespace: "old-ns").isEmpty)
        #expect(try await store.devices(namespace: "new-ns").count == 1)
        // Same token under a new deviceId (the Android upgrade that changed its id).
        _ = try await store.upsert(try request("new-ns", deviceId: "dev-2", token: "shared"), now: 3)
        #expect(try await store.devices(namespace: "new-ns").map(\.deviceId) == ["dev-2"])
        // Same token under another platform.
        _ = try await store.upsert(try request("new-ns", platform: "wear", deviceId: "dev-2", token: "shared"), now: 4)
        let rows = try await store.devices(namespace: "new-ns")
        #expect(rows.count == 1)
        #expect(rows.first?.platform == .wear)
    }

    @Test(arguments: StoreKind.allCases)
    func unregisterRemovesOnlyThatNamespacesToken(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        _ = try await store.upsert(try request("a", deviceId: "d1", token: "t1"), now: 1)
        _ = try await store.upsert(try request("b", deviceId: "d2", token: "t2"), now: 1)
        #expect(try await store.unregister(namespace: "b", token: "t1") == false)
        #expect(try await store.devices(namespace: "a").count == 1)
        #expect(try await store.unregister(namespace: "a", token: "t1") == true)
        #expect(try await store.devices(namespace: "a").isEmpty)
        #expect(try await store.unregister(namespace: "a", token: "unknown") == false)
        #expect(try await store.devices(namespace: "b").count == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func unregisterMatchesIOSTokensInAnyCase(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        _ = try await store.upsert(try request(platform: "ios", token: iosToken.uppercased(), key: keyA), now: 1)
        #expect(try await store.devices(namespace: "ns").first?.token == iosToken)
        #expect(try await store.unregister(namespace: "ns", token: iosToken.uppercased()))
        #expect(try await store.devices(namespace: "ns").isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func fcmTokensAreCaseSensitive(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        _ = try await store.upsert(try request(token: "AbC"), now: 1)
        _ = try await store.upsert(try request(deviceId: "dev-2", token: "abc"), now: 2)
        #expect(try await store.devices(namespace: "ns").map(\.token) == ["abc", "AbC"])
        #expect(try await store.unregister(namespace: "ns", token: "ABC") == false)
    }

    @Test(arguments: StoreKind.allCases)
    func pruneRemovesExactlyThatTokenInThatNamespace(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        _ = try await store.upsert(try request("a", deviceId: "d1", token: "dead"), now: 100)
        _ = try await store.upsert(try request("a", deviceId: "d2", token: "alive"), now: 100)
        #expect(try await store.prune(namespace: "b", token: "dead") == false)
        #expect(try await store.prune(namespace: "a", token: "dead") == true)
        #expect(try await store.devices(namespace: "a").map(\.token) == ["alive"])
    }

    @Test(arguments: StoreKind.allCases)
    func pruneSparesARegistrationRefreshedAfterTheTokenDied(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        _ = try await store.upsert(try request(token: "t"), now: 5000)
        #expect(try await store.prune(namespace: "ns", token: "t", notAfter: 4000) == false)
        #expect(try await store.devices(namespace: "ns").count == 1)
        #expect(try await store.prune(namespace: "ns", token: "t", notAfter: 5000) == true)
    }

    @Test(arguments: StoreKind.allCases)
    func listsNewestFirstAndFiltersPlatforms(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        _ = try await store.upsert(try request(deviceId: "old", token: "t1"), now: 10)
        _ = try await store.upsert(try request("ns", platform: "ios", deviceId: "new", token: iosToken, key: keyA), now: 30)
        _ = try await store.upsert(try request("ns", platform: "wear", deviceId: "mid", token: "t3"), now: 20)
        _ = try await store.upsert(try request("other", deviceId: "x", token: "t4"), now: 40)
        #expect(try await store.devices(namespace: "ns").map(\.deviceId) == ["new", "mid", "old"])
        #expect(try await store.devices(namespace: "ns", platforms: [.phone, .wear]).map(\.deviceId) == ["mid", "old"])
        #expect(try await store.devices(namespace: "ns", platforms: []).isEmpty)
        #expect(try await store.devices(namespace: "nobody").isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func wearKeysAreNeverStored(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        _ = try await store.upsert(try request(platform: "wear", token: "w", key: keyA), now: 1)
        #expect(try await store.devices(namespace: "ns").first?.pushKey == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func keysRoundTripCanonically(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        _ = try await store.upsert(try request(platform: "ios", token: iosToken, key: keyA), now: 1)
        let key = try #require(try await store.devices(namespace: "ns").first?.pushKey)
        #expect(key.base64 == keyA)
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentTasksLoseNothing(_ kind: StoreKind) async throws {
        let dir = TemporaryDirectory()
        let store = try await kind.make(dir)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for i in 0..<100 {
                        _ = try await store.upsert(try request("ns", deviceId: "d-\(task)-\(i)", token: "t-\(task)-\(i)"), now: Int64(i))
                    }
                }
            }
            try await group.waitForAll()
        }
        let devices = try await store.devices(namespace: "ns")
        #expect(devices.count == 800)
        #expect(Set(devices.map(\.token)).count == 800)
    }
}
