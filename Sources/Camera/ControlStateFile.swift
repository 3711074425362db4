#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Capture
import Evdev
import V4L2
import Udev
import LinuxIO

/// The small state file that remembers the current control across restarts
/// (`$STATE_DIRECTORY/state.json` under systemd's `StateDirectory=`, else
/// `$XDG_STATE_HOME/evcapture/state.json`, else `~/.local/state/evcapture/state.json`):
/// `{"currentControl":"zoom"}`. The controls core takes and returns the name; this reads
/// and writes the file, atomically (a temporary file renamed over it).
public struct ControlStateFile: Sendable {
    public var path: String

    public init(path: String) { self.path = path }

    /// The default location from the environment; `nil` when none of `STATE_DIRECTORY`,
    /// `XDG_STATE_HOME` and `HOME` is set (then nothing is remembered). The service's
    /// `StateDirectory=` comes first: `ProtectHome=` hides `$HOME` from it.
    public init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first, state.hasPrefix("/") {
            path = state + "/state.json"  // several directories are ':'-separated; ours is the first
        } else if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") {
            path = xdg + "/evcapture/state.json"
        } else if let home = environment["HOME"], !home.isEmpty {
            path = home + "/.local/state/evcapture/state.json"
        } else {
            return nil
        }
    }

    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var problem: String
        public var description: String { "\(path): \(problem)" }
    }

    private struct Contents: Codable { var currentControl: String? }

    /// The remembered control name; `nil` when the file does not exist yet.
    public func load() throws(Failure) -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data: Data
        do { data = Data(try readWholeFile(path).utf8) } catch {
            throw Failure(path: path, problem: "cannot read: \(error)")
        }
        do { return try JSONDecoder().decode(Contents.self, from: data).currentControl } catch {
            throw Failure(path: path, problem: "not a state file (expected {\"currentControl\": \"name\"}): \(error)")
        }
    }

    /// Writes `currentControl`, creating the directory; the old file is replaced atomically.
    public func save(currentControl: String) throws(Failure) {
        let url = URL(fileURLWithPath: path)
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            var data = try encoder.encode(Contents(currentControl: currentControl))
            data.append(0x0a)
            try data.write(to: url, options: .atomic)
        } catch {
            throw Failure(path: path, problem: "cannot write: \((error as? CocoaError)?.underlying.map { "\($0)" } ?? "\(error)")")
        }
    }
}
