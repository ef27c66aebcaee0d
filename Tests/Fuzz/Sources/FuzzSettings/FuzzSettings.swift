import Foundation
import FuzzCheck
import PushNative

/// One scratch data directory per process; each input is written as its settings.json.
let directory: String = {
    let path = NSTemporaryDirectory() + "hapi-fuzz-settings-\(getpid())"
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}()
let settingsPath = directory + "/settings.json"

/// The loader reads any settings.json without crashing: it throws only when the file is not a
/// JSON object (and then `read()` throws too), never writes with `persist: false`, and what it
/// loads can be described.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Data(bytes: data, count: size)
    try! input.write(to: URL(fileURLWithPath: settingsPath))

    let read = Result { () throws(PushSettingsFileError) in try SettingsFile(path: settingsPath).read() }
    do {
        let configuration = try PushConfiguration.load(environment: ["HOME": directory], dataDirectory: directory, persist: false)
        guard case .success = read else { violated("load succeeded where read() failed") }
        require(configuration.persistedKeys.isEmpty, "persisted keys with persist: false")
        _ = configuration.description
        _ = configuration.jsonValue.canonicalBytes
    } catch {
        guard case .failure(let readError) = read, readError == error else { violated("load threw \(error), read gave \(read)") }
    }
    require(FileManager.default.contents(atPath: settingsPath) == input, "settings.json was modified")
    return 0
}
