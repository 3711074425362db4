/// What `evemu-record` writes: a device description (`N:`, `I:`, `P:`, `B:`, `A:` lines)
/// and the events it saw (`E:` lines), on the recording's own clock. Evdev reads the files
/// (`EvemuRecording.parse(_:file:)`, `EvemuRecording.load(path:)`).
public struct EvemuRecording: Sendable {
    public var description: DeviceDescription
    public var events: [InputEvent]

    public init(description: DeviceDescription, events: [InputEvent]) {
        self.description = description
        self.events = events
    }
}
