// libFuzzer target: the live view's request path (docs/live-view.md#security) on arbitrary
// bytes from a client: the connection's own handlers (the guard, NIOHTTP1's parser, the
// connection handler) on an EmbeddedChannel, with and without credentials, the clock then
// run past every deadline. Every answer must be a whole HTTP/1 response that refuses
// framing, the bytes written must stay bounded, and the connection must be closed once the
// deadlines have passed. A crash, a hang or a broken rule is a finding.
import LiveView
import Logging
import NIOCore
import NIOEmbedded

import FuzzDriver

#if canImport(Glibc)
import Glibc
#endif

let logger = Logger(label: "fuzz-http", factory: { _ in SwiftLogNoOpLogHandler() })

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var settings = LiveViewSettings()
    // The first byte chooses: credentials or not, and how the bytes arrive (at once or in pieces).
    if bytes[0] & 1 == 1 { settings.credentials = Credentials(username: "viewer", password: "open sesame") }
    let pieces = Int(bytes[0] >> 1 & 7) + 1
    let body = bytes.dropFirst()
    let loop = EmbeddedEventLoop()
    let channel = EmbeddedChannel(loop: loop)
    var nextTurn: () -> Bool = { false }
    do {
        nextTurn = try LiveViewServer.serveStandalone(channel, settings: settings, outputDirectory: "/nonexistent", logger: logger)
        let address = try SocketAddress(ipAddress: "192.0.2.1", port: 40000)
        channel.remoteAddress = address
        try channel.connect(to: address).wait()
    } catch {
        report("fuzz-http: cannot set up the channel: \(error)\n")
        abort()
    }
    var output: [UInt8] = []
    func collect() {
        while let b = try? channel.readOutbound(as: ByteBuffer.self) { output += b.readableBytesView }
    }
    let step = max(1, (body.count + pieces - 1) / pieces)
    var start = body.startIndex
    while start < body.endIndex, channel.isActive {
        let end = min(body.endIndex, start + step)
        _ = try? channel.writeInbound(ByteBuffer(bytes: body[start..<end]))
        loop.run()
        // Pipelined requests: one answer per turn of the loop (at most 17 can be queued).
        var turns = 0
        while nextTurn(), turns < 64 {
            loop.advanceTime(by: .milliseconds(1))
            turns += 1
        }
        collect()
        loop.advanceTime(by: .seconds(1))
        start = end
    }
    // Past every deadline: whatever the bytes were, the connection is gone, unless it was
    // answered with a stream (MJPEG or events), which stays open by design while its client
    // reads (here every byte is read at once) and is counted among the stream clients.
    loop.advanceTime(by: .seconds(60))
    collect()
    if channel.isActive {
        let text = String(decoding: output, as: UTF8.self)
        let streaming = ["Content-Type: multipart/x-mixed-replace", "Content-Type: text/event-stream"].contains {
            text.contains(" 200 OK\r\n") && text.contains($0)
        }
        if !streaming {
            report("fuzz-http: the connection is still open after every deadline: \(text.prefix(400).debugDescription)\n")
            abort()
        }
        channel.close(promise: nil)
        loop.run()
        collect()
    }
    _ = try? channel.finish()
    check(output, inputBytes: body.count)
    return 0
}

/// Every response: a status line, headers with `X-Frame-Options: DENY` (except `100 Continue`),
/// and what was written is bounded by the answers a request of this size can get.
func check(_ output: [UInt8], inputBytes: Int) {
    let text = String(decoding: output, as: UTF8.self)
    guard !text.isEmpty else { return }
    if !text.hasPrefix("HTTP/1.") {
        report("fuzz-http: output does not start with a status line: \(text.prefix(80).debugDescription)\n")
        abort()
    }
    // A body need not end in CR LF, so a status line is counted wherever it starts (the
    // server's own bodies never hold one: plain messages, the page, JSON of no files).
    let statusLines = ["HTTP/1.0 ", "HTTP/1.1 "].map { text.components(separatedBy: $0).count - 1 }.reduce(0, +)
    let interim = text.components(separatedBy: " 100 Continue\r\n").count - 1
    let framing = text.components(separatedBy: "\r\nX-Frame-Options: DENY\r\n").count - 1
    if framing != statusLines - interim {
        report("fuzz-http: \(statusLines - interim) answers, \(framing) with X-Frame-Options: \(text.prefix(400).debugDescription)\n")
        abort()
    }
    // At most one answer per 16 bytes of request (the smallest request is longer), none over 64 KB.
    if output.count > (inputBytes / 16 + 1) * 64 * 1024 {
        report("fuzz-http: \(output.count) bytes written for \(inputBytes) bytes read\n")
        abort()
    }
}

/// Writes a finding to stderr (fd 2; the C `stderr` global is not concurrency-safe in Swift 6).
func report(_ text: String) {
    var t = text
    t.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

/// The program's main (SwiftPM links `main` to `<module>_main`): hands over to libFuzzer.
@_cdecl("fuzz_http_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        guard let data else { return 0 }
        return fuzzHTTP(data, size)
    }
}
