import ArgumentParser
import LinuxIO
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
import EvcaptureDaemon
import Camera
import Output
import ConfigFile
#endif

/// `evcapture run [--config FILE] [--socket PATH] [--json]`: the daemon.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the daemon: buttons and knobs → capture events, photos, videos, hooks and camera controls.",
        discussion: """
            With no config it uses every suitable input device with its default roles, the first \
            camera with a zoom or exposure control, zoom and exposure-bias controls, and takes a \
            photo on a primary click and records video while a primary long press is held. \
            SIGTERM, SIGINT or SIGHUP stop it cleanly (grabs released, recording finished, exit 0); \
            to take a changed config, restart it. SIGPIPE is ignored: a closed stdout ends the \
            stdout lines only.

            JSON lines go to a Unix socket for `evcapture monitor`: --socket, [socket] path, or by \
            default $RUNTIME_DIRECTORY/evcapture.sock under systemd, else \
            $XDG_RUNTIME_DIR/evcapture.sock.

            Documentation: man evcapture (installed with the package), /usr/share/doc/evcapture/docs/ \
            or docs/ in the source (configuration.md for every setting; the Raspberry Pi, \
            troubleshooting).
            """)

    @OptionGroup var config: ConfigOption

    @Option(name: .long, help: "A Unix socket for JSON lines (mode 0660). Overrides [socket] path and the default.")
    var socket: String?

    @Flag(name: .long, help: "JSON lines on stdout instead of readable lines.")
    var json = false

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    func run() async throws {
        // A bad config stops everything before anything starts.
        let settings = try config.load()
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = EscapingLogHandler(StreamLogHandler.standardError(label: label))
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "evcapture")
        let notifier = SystemdNotifier()
        let daemon = Daemon(
            config: settings, output: DaemonOutputOptions(json: json, socketPath: socket), logger: logger,
            onReady: {
                do { _ = try notifier.ready(status: "watching input devices") } catch { logger.warning("sd_notify: \(error)") }
            })
        // A reader of stdout that went away (`run --json | head -1`) is an EPIPE for the
        // stdout writer, not the end of the daemon.
        signal(SIGPIPE, SIG_IGN)
        // SIGTERM / SIGINT / SIGHUP: our own handling, not the group's (a DispatchSource: see
        // ShutdownSignals). SIGHUP (the terminal or session went away) is a clean stop, not a
        // reload; under `nohup` (SIGHUP ignored when started) it stays ignored.
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: daemon, successTerminationBehavior: .gracefullyShutdownGroup)],
                logger: logger))
        ShutdownSignals.watch([SIGTERM, SIGINT] + (ShutdownSignals.isIgnored(SIGHUP) ? [] : [SIGHUP])) { signal in
            logger.debug("shutting down", metadata: ["signal": "\(signal)"])
            Task { await group.triggerGracefulShutdown() }
        }
        do {
            try await group.run()
        } catch {
            writeStderr("evcapture: \(error)\n")
            throw ExitCode.failure
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
