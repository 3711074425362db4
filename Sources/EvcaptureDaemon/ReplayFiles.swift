import Capture
import Evdev
import Vocabulary

// Replay's recordings read from their files: the core takes them parsed (docs/architecture.md#the-spine).
extension ReplayInput {
    /// Loads and parses every file before anything is replayed, so a bad file stops the
    /// replay before it prints a single event.
    public static func load(paths: [String]) throws(EvemuError) -> [ReplayInput] {
        var inputs: [ReplayInput] = []
        for p in paths { inputs.append(ReplayInput(path: p, recording: try EvemuRecording.load(path: p))) }
        return inputs
    }
}
