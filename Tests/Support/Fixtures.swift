import Vocabulary

/// The repository's evemu fixtures (`Tests/Fixtures`).
public enum Fixtures {
    /// The repository's root, from this file's path.
    public static let repository: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)  // Tests/Support/Fixtures.swift
        return parts.joined(separator: "/")
    }()

    /// The path of a fixture file.
    public static func path(_ name: String) -> String { repository + "/Tests/Fixtures/" + name }

    /// The evemu recording of device `name` (`Tests/Fixtures/NAME.evemu`).
    public static func evemu(_ name: String) -> String { path(name + ".evemu") }

    /// The nine device recordings that the tests over every recording go through, in this order.
    public static let recordedDevices = [
        "gpio-keys-volume-keys", "thinkpad-extra-buttons-camera", "logitech-media-keyboard-elite-volume-wheel",
        "huion-q620m-dial", "bluez-avrcp-headset", "rotary-encoder-rel-x", "rotary-encoder-push-switch-gpio-keys",
        "griffin-powermate", "usb-keyboard-typing-and-volume",
    ]
}

/// A clock driven by hand: tests say what time it is.
public struct ManualClock: Sendable {
    public private(set) var now: Timestamp
    public init(at start: Timestamp = Timestamp(microseconds: 0)) { now = start }
    /// Moves the clock forward.
    public mutating func advance(by d: Duration) { now = now + d }
    public mutating func advance(to t: Timestamp) { now = max(now, t) }
}

/// A time on a test clock, in seconds.
public func at(_ s: Double) -> Timestamp { Timestamp(microseconds: Int64((s * 1_000_000).rounded())) }

/// A time on a test clock, in milliseconds.
public func ms(_ v: Int) -> Timestamp { Timestamp(microseconds: Int64(v) * 1000) }

extension Fixtures {
    /// The fixtures directory.
    public static var directory: String { repository + "/Tests/Fixtures" }
}
