import Foundation

/// V4L2 device nodes found through `/sys/class/video4linux`.
enum VideoNodes {
    /// `/dev/videoN` of the first interface (index 0, the capture node, not the metadata
    /// node) whose V4L2 name satisfies `matches`, or nil.
    static func node(where matches: (String) -> Bool) -> String? {
        let classDir = "/sys/class/video4linux"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: classDir)) ?? []
        for entry in entries.sorted() where entry.hasPrefix("video") {
            guard let name = read("\(classDir)/\(entry)/name"), matches(name) else { continue }
            guard (read("\(classDir)/\(entry)/index") ?? "0") == "0" else { continue }
            let node = "/dev/\(entry)"
            if FileManager.default.fileExists(atPath: node) { return node }
        }
        return nil
    }

    private static func read(_ path: String) -> String? {
        (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The capture node of vivid's first instance (`vivid-000-vid-cap`); the guest loads two
/// (`n_devs=2`, the second for the rig tests' second station). vivid has User controls
/// (brightness, contrast, ...) but no camera-class controls such as zoom or exposure: use
/// ``FakeCamera`` for those.
func vividNode(instance: Int = 0) -> String? {
    VideoNodes.node { $0 == "vivid-00\(instance)-vid-cap" }
}
