#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
/// JSON messages ending in NUL, commands read from its descriptor 3, answers written to its
/// descriptor 4). Two FIFOs in `directory` are those descriptors; the test holds both ends of
/// each (`O_RDWR`), so neither side blocks in `open`, whichever comes first.
public final class ChromiumPipe {
    private let process: TestChild
    private let log: String
    private let toBrowser: Int32
    private let fromBrowser: Int32
    private var received: [UInt8] = []
    private var lastID = 0

    public static let executable = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// Starts the browser on `url` with a profile in `directory`, with `arguments` after the
    /// headless ones.
    public init(url: String, directory: String, environment: [String: String], arguments: [String] = []) throws {
        guard let chrome = Self.executable else { throw ProtocolError(description: "no chromium") }
        let input = directory + "/devtools-in"
        let output = directory + "/devtools-out"
        for fifo in [input, output] {
            guard mkfifo(fifo, 0o600) == 0 else { throw ProtocolError(description: "mkfifo \(fifo): errno \(errno)") }
        }
        toBrowser = open(input, O_RDWR | O_CLOEXEC)
        fromBrowser = open(output, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard toBrowser >= 0, fromBrowser >= 0 else { throw ProtocolError(description: "open \(directory)/devtools-*: errno \(errno)") }
        var env = environment
        env["HOME"] = directory
        let options =
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--mute-audio",
                "--autoplay-policy=no-user-gesture-required", "--user-data-dir=\(directory)/profile", "--remote-debugging-pipe",
            ] + arguments + [url]
        log = directory + "/chromium.log"
        // The shell gives it the FIFOs as descriptors 3 and 4 (a TestChild gets none of the test's).
        process = try TestChild(
            ["/bin/sh", "-c", "exec \"$0\" \"$@\" 3<'\(input)' 4>'\(output)'", chrome] + options, environment: env, log: log)
    }

    deinit {
        process.terminate(timeout: .seconds(10))
        close(toBrowser)
        close(fromBrowser)
    }

    public var isRunning: Bool { process.isRunning }

    /// Ends the browser at once (SIGKILL): its pages say goodbye to nobody.
    public func kill() {
        process.killAndReap()
    }
    /// What the browser wrote to its stdout and stderr.
    public var transcript: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    public struct ProtocolError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Sends a command and waits for its answer's `result`; throws on an error answer, on a
    /// timeout, or when the browser exited.
    @discardableResult
    public func call(_ method: String, _ params: [String: Any] = [:], session: String? = nil, timeout: Duration = .seconds(120)) throws
        -> [String: Any]
    {
        lastID += 1
        let id = lastID
        var message: [String: Any] = ["id": id, "method": method, "params": params]
        if let session { message["sessionId"] = session }
        var bytes = Array(try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        let written = bytes.withUnsafeBytes { write(toBrowser, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw ProtocolError(description: "\(method): write to the browser failed") }
        let deadline = ContinuousClock.now + timeout
        while true {
            while let end = received.firstIndex(of: 0) {
                let data = Data(received[..<end])
                received.removeSubrange(...end)
                guard let answer = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], answer["id"] as? Int == id else {
                    continue  // an event, or the answer to a command given up on
                }
                if let error = answer["error"] { throw ProtocolError(description: "\(method): \(error)") }
                return answer["result"] as? [String: Any] ?? [:]
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw ProtocolError(description: "\(method): no answer within \(timeout)") }
            guard process.isRunning else { throw ProtocolError(description: "\(method): the browser exited\n\(transcript)") }
            var p = pollfd(fd: fromBrowser, events: Int16(POLLIN), revents: 0)
            _ = poll(&p, 1, Int32(min(1000, left.components.seconds * 1000 + 1)))
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fromBrowser, $0.baseAddress, $0.count) }
            if n > 0 { received += chunk[0..<n] }
        }
    }

    /// A session attached to the first page (the one opened on the command line).
    public func attachToPage() throws -> String {
        let targets = try call("Target.getTargets")["targetInfos"] as? [[String: Any]] ?? []
        guard let page = targets.first(where: { $0["type"] as? String == "page" }), let id = page["targetId"] as? String else {
            throw ProtocolError(description: "no page among \(targets)")
        }
        guard let session = try call("Target.attachToTarget", ["targetId": id, "flatten": true])["sessionId"] as? String else {
            throw ProtocolError(description: "Target.attachToTarget gave no session")
        }
        return session
    }

    /// A session attached to the first page once the browser has opened it (up to a minute
    /// and more under emulation); throws, with the browser's output, when it did not in
    /// `timeout` or the browser ended.
    public func attachToFirstPage(timeout: Duration) throws -> String {
        var session: String?
        _ = pollUntil(timeout: timeout) {
            session = try? attachToPage()
            return session != nil || !isRunning
        }
        guard let session else { throw ProtocolError(description: "no page to attach to\n\(transcript)") }
        return session
    }

    /// Loads `url` in the session's page; whether its document is complete within `timeout`.
    /// A navigation can be lost under emulation (the browser's network service was seen
    /// restarting in its first minute): asked again, up to `attempts` times.
    public func navigate(_ url: String, session: String, attempts: Int = 4, timeout: Duration = .seconds(60)) -> Bool {
        for _ in 0..<attempts {
            _ = try? call("Page.navigate", ["url": url], session: session)
            let complete = pollUntil(timeout: timeout, every: .milliseconds(100)) {
                (try? evaluate("location.href + ' ' + document.readyState", session: session)) == "\(url) complete"
            }
            if complete { return true }
        }
        return false
    }

    /// Evaluates `expression` in the page (a promise is awaited) and returns its value, which
    /// must be a string; a JavaScript exception throws with its text.
    public func evaluate(_ expression: String, session: String, timeout: Duration = .seconds(120)) throws -> String {
        let result = try call(
            "Runtime.evaluate", ["expression": expression, "awaitPromise": true, "returnByValue": true], session: session,
            timeout: timeout)
        if let exception = result["exceptionDetails"] { throw ProtocolError(description: "\(expression.prefix(80))…: \(exception)") }
        return (result["result"] as? [String: Any])?["value"] as? String ?? ""
    }
}
