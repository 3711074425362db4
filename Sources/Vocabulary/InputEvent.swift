/// One evdev event.
public struct InputEvent: Hashable, Sendable {
    public var time: Timestamp
    public var type: EventType
    public var code: UInt16
    public var value: Int32
    public init(time: Timestamp, type: EventType, code: UInt16, value: Int32) {
        self.time = time
        self.type = type
        self.code = code
        self.value = value
    }
    public init(time: Timestamp, _ code: EventCode, _ value: Int32) {
        self.init(time: time, type: code.type, code: code.code, value: value)
    }
    public var eventCode: EventCode { EventCode(type, code) }
    package var isSynReport: Bool { type == .syn && code == 0 }
}
