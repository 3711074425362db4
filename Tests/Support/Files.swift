import Foundation
import Logging

/// A new, empty directory for one test, named after it.
public func temporaryDirectory(_ label: String = #function) throws -> String {
    let base = FileManager.default.temporaryDirectory.path
    let dir = "\(base)/evcapture-test-\(label.filter(\.isLetter).prefix(24))-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

/// The logger tests hand to the code under test.
public let testLogger = Logger(label: "evcapture.tests")
