// One item of EvdevDevice's input stream; its frames are the floor's (Vocabulary's Frame).
import Vocabulary

/// One item of a device's input stream.
public enum DeviceInput: Hashable, Sendable {
    case frame(Frame)
    /// The device is gone (unplugged, `ENODEV`/`EPOLLHUP`), or reading failed for good
    /// (the error says why). Nothing follows.
    case removed(EvdevError?)
}
