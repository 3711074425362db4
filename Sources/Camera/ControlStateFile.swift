#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import JSON
import Udev
import LinuxIO
import Logging
import Synchronization

/// The small state file that remembers the current control across restarts
/// (`$STATE_DIRECTORY/state.json` under systemd, whose unit has `StateDirectory=evcapture`
/// and `ProtectHome=yes` — a home directory is out of reach there; else
/// `$XDG_STATE_HOME/evcapture/state.json`, else `~/.local/state/evcapture/state.json`):
/// `{"current_control":"zoom"}` (a file of an earlier version, `{"currentControl":"zoom"}`,
/// is read too). The controls core takes and returns the name; this reads and writes the
/// file, atomically (a temporary file renamed over it). The daemon writes
/// through a ``ControlStateSaver``, off the input thread.
public struct ControlStateFile: Sendable {
    public var path: String

    public init(path: String) { self.path = path }

    /// The default location from the environment; `nil` when none of `STATE_DIRECTORY`,
    /// `XDG_STATE_HOME` and `HOME` is set (then nothing is remembered).
    public init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first, state.hasPrefix("/") {
            // systemd's StateDirectory= (several are ':'-separated; ours is the first).
            path = state + "/state.json"
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

    /// The remembered control name; `nil` when the file does not exist yet.
    public func load() throws(Failure) -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data: Data
        do { data = Data(try readWholeFile(path).utf8) } catch {
            throw Failure(path: path, problem: "cannot read: \(error)")
        }
        let contents: JSONValue
        do { contents = try JSONValue.parse(data) } catch {
            throw Failure(path: path, problem: "not a state file (expected {\"current_control\": \"name\"}): \(error)")
        }
        // The key in snake_case, as every JSON key the program writes; earlier versions wrote
        // `currentControl`.
        switch contents["current_control"] ?? contents["currentControl"] {
        case .string(let name): return name
        case nil where contents.isObject, .null: return nil
        default: throw Failure(path: path, problem: "not a state file (expected {\"current_control\": \"name\"})")
        }
    }

    /// Writes `current_control`, creating the directory; the old file is replaced atomically.
    public func save(currentControl: String) throws(Failure) {
        let url = URL(fileURLWithPath: path)
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let data = Data((JSONValue.object([("current_control", .string(currentControl))]).encoded + "\n").utf8)
            try data.write(to: url, options: .atomic)
        } catch {
            throw Failure(path: path, problem: "cannot write: \((error as? CocoaError)?.underlying.map { "\($0)" } ?? "\(error)")")
        }
    }
}

/// Saves the current control on a thread of its own, the latest name winning: the controls
/// report a change on the input thread, where a file write (a directory, a temporary file,
/// a rename) must not happen. One save at a time; names that come meanwhile replace each
/// other, and the last one is saved next.
public final class ControlStateSaver: Sendable {
    private struct State {
        var pending: String?
        var saving = false
    }
    private let state = Mutex(State())
    private let save: @Sendable (String) -> Void

    /// `save` runs on the saver's thread.
    public init(save: @escaping @Sendable (String) -> Void) {
        self.save = save
    }

    /// Saves to `file`, logging a failure.
    public convenience init(file: ControlStateFile, logger: Logger) {
        self.init { name in
            do { try file.save(currentControl: name) } catch { logger.warning("cannot remember the current control: \(error)") }
        }
    }

    /// Queues `name` and returns at once.
    public func remember(_ name: String) {
        let start = state.withLock { s -> Bool in
            s.pending = name
            if s.saving { return false }
            s.saving = true
            return true
        }
        if start { startThread(name: "evc-state") { [self] in drain() } }
    }

    /// Whether nothing is being saved or waiting to be.
    var isIdle: Bool { state.withLock { !$0.saving } }

    private func drain() {
        while let name = state.withLock({ s -> String? in
            defer { s.pending = nil }
            if s.pending == nil { s.saving = false }
            return s.pending
        }) {
            save(name)
        }
    }
}
