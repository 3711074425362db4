import ArgumentParser

#if canImport(Glibc)
import Glibc
import LinuxIO
import EvcaptureDaemon
import Camera
import Output
import ConfigFile
#endif

/// `evcapture monitor`: a live view of a running daemon.
struct MonitorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Show capture events and the active control of a running evcapture daemon.",
        discussion: """
            Connects to the daemon's socket: without --socket, this user's daemon \
            ($XDG_RUNTIME_DIR/evcapture.sock, where `evcapture run` opens it by default), else \
            the service's (/run/evcapture/evcapture.sock; readable by the evcapture group). On a \
            terminal the control's line is redrawn in place; otherwise every update is a line of its own.
            """)

    @Option(name: .long, help: ArgumentHelp("The daemon's socket (default: see below).", valueName: "PATH"))
    var socket: String?

    func run() throws {
        let candidates = DaemonSettings.monitorSocketCandidates()
        // The first that exists; with none, the first, so the error names where a daemon would be.
        // first(where:) spelled out: Swift 6.2 did not type-check `first { … }` between two ??s
        let existing = candidates.first(where: { access($0, F_OK) == 0 })
        let socket: String = self.socket ?? existing ?? candidates[0]
        let terminal = isatty(STDOUT_FILENO) == 1
        let renderer = MonitorRenderer(isTerminal: terminal, width: terminal ? Self.terminalWidth() : 100)
        do {
            try MonitorClient.run(socketPath: socket, renderer: renderer) { text in
                Self.write(STDOUT_FILENO, text)
            }
        } catch {
            Self.write(STDERR_FILENO, "evcapture monitor: \(error)\n")
            throw ExitCode.failure
        }
        Self.write(STDERR_FILENO, "evcapture monitor: the daemon closed the connection\n")
    }

    /// Unbuffered, so each update shows at once.
    static func write(_ fd: Int32, _ text: String) {
        try? writeAll(fd, text)  // a closed terminal ends the monitor's output, nothing else
    }

    static func terminalWidth() -> Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }
}
