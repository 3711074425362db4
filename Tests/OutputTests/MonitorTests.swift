import EvcaptureTesting
import Foundation
import LinuxIO
import Synchronization
import Testing
@testable import Output
import Vocabulary

@Suite struct MonitorRenderingTests {
    @Test func controlLineMarksValueAndProminentValues() {
        let line = renderControlLine(
            title: "Zoom", value: 2.5, range: 1...5, prominent: [2, 4], format: "%.1f×", width: 40)
        #expect(line == "Zoom [=======|==O---------|-------] 2.5×")
        #expect(line.count == 40)
    }

    @Test func valueAtTheEndsAndOutOfRange() {
        #expect(renderControlLine(title: "EV", value: -2, range: -2...2, format: "%+.1f EV", width: 30) == "EV [O----------------] -2.0 EV")
        #expect(renderControlLine(title: "EV", value: 9, range: -2...2, format: "%+.1f EV", width: 30) == "EV [================O] +9.0 EV")
        #expect(renderControlLine(title: "X", value: 3, range: 3...3, width: 12) == "X [O-----] 3")
    }

    @Test func longTitlesAreShortenedToFit() {
        let line = renderControlLine(title: "A very long control title indeed", value: 50, range: 0...100, width: 30)
        #expect(line.count == 30)
        #expect(line.hasSuffix(" 50") && line.contains("[==O--]"))
    }

    @Test func formats() {
        #expect(formatValue(2.345, "%.1f×") == "2.3×")
        #expect(formatValue(0.333, "%+.1f EV") == "+0.3 EV")
        #expect(formatValue(250, "%d raw") == "250 raw")
        #expect(formatValue(50, "%d%%") == "50%")
        #expect(formatValue(1.5, nil) == "1.5")
        #expect(formatValue(1.5, "%@ boom %s") == "1.5", "unsafe formats fall back")
        #expect(formatValue(1.5, "%f %f") == "1.5")
        #expect(formatValue(1.5, "%%d%s") == "1.5", "the conversion is the % outside %%, not a d after one")
    }

    @Test func terminalRedrawsTheControlInPlaceAndKeepsEventsAbove() {
        var r = MonitorRenderer(isTerminal: true, width: 40)
        let clear = "\r\u{1B}[2K"
        let control =
            #"{"event":"control","time":1,"control":"Zoom","value":2.5,"min":1,"max":5,"prominent":[2,4],"format":"%.1f×","raw":250}"#
        let zoomLine = "Zoom [=======|==O---------|-------] 2.5×"
        #expect(r.consume(line: control) == clear + zoomLine)
        let capture =
            #"{"event":"capture","time":0.5,"phase":"began","action":"primary","button":"KEY_VOLUMEDOWN","device":{"name":"gpio-keys","node":"/dev/input/event0"},"press":7,"sound":false}"#
        let out = r.consume(line: capture)
        #expect(out.hasPrefix(clear) && out.hasSuffix("\n" + zoomLine), "event above, control redrawn: \(out.debugDescription)")
        #expect(out.contains("capture began primary KEY_VOLUMEDOWN press 7 \"gpio-keys\""))
        #expect(r.consume(line: #"{"event":"controls","state":"inactive"}"#) == clear)
        #expect(r.controlLine == nil)
    }

    @Test func plainOutputIsOneLinePerUpdate() {
        var r = MonitorRenderer(isTerminal: false, width: 60)
        let cancelled =
            #"{"event":"capture","time":0,"phase":"cancelled","action":"secondary","button":"KEY_PLAYPAUSE","device":"WH-1000XM4 (AVRCP)","press":3,"sound":true,"reason":"device removed"}"#
        let text = r.consume(line: cancelled)
        #expect(text.hasSuffix("capture cancelled secondary KEY_PLAYPAUSE press 3 \"WH-1000XM4 (AVRCP)\" (sound) reason: device removed\n"))
        #expect(!text.contains("\u{1B}"))
        #expect(
            r.consume(line: #"{"event":"control","control":"Exposure bias","value":0.333,"min":-2,"max":2,"format":"%+.1f EV"}"#).hasSuffix(
                " +0.3 EV\n"))
        #expect(r.consume(line: #"{"event":"control","control":"White balance","value":"Daylight"}"#) == "White balance  Daylight\n")
        #expect(r.consume(line: #"{"event":"controls","state":"active"}"#) == "controls active\n")
        #expect(
            r.consume(line: #"{"event":"control","control":"Flag","value":true,"min":0,"max":1}"#) == "Flag  on\n",
            "booleans are not numbers")
        #expect(r.consume(line: #"{"event":"error","message":"camera: busy"}"#) == "error camera: busy\n")
        #expect(r.consume(line: "not json") == "? not json\n")
    }
}

@Suite struct MonitorClientTests {
    @Test func readsTheDaemonsSocketUntilItCloses() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try IOLoop()
        defer { loop.stop() }
        let server = try SocketServer(path: "\(dir)/s.sock", loop: loop, logger: testLogger)
        let output = Mutex("")
        let done = OneShot<Bool>()
        let thread = Thread {
            do {
                try MonitorClient.run(socketPath: "\(dir)/s.sock", renderer: MonitorRenderer(isTerminal: false)) { text in
                    output.withLock { $0 += text }
                }
                done.fulfil(true)
            } catch {
                done.fulfil(false)
            }
        }
        thread.start()
        #expect(await eventually { server.clientCount == 1 })
        server.broadcast(#"{"event":"capture","phase":"began","action":"primary","button":"KEY_CAMERA","press":1}"#)
        server.broadcast(#"{"event":"capture","phase":"ended","action":"primary","button":"KEY_CAMERA","press":1}"#)
        #expect(await eventually { output.withLock { $0 }.split(separator: "\n").count == 2 })
        server.stop()
        #expect(await done.value())
        #expect(output.withLock { $0 } == "capture began primary KEY_CAMERA press 1\ncapture ended primary KEY_CAMERA press 1\n")
    }

    @Test func aMissingDaemonIsAClearError() {
        #expect {
            try MonitorClient.run(socketPath: "/nonexistent/evcapture.sock", renderer: MonitorRenderer(isTerminal: false)) { _ in }
        } throws: { error in
            "\(error)".contains("/nonexistent/evcapture.sock") && "\(error)".contains("evcapture run --socket")
        }
    }
}

/// Control lines say when the zoom is digital (docs/behaviour.md#controls).
@Suite struct DigitalZoomLineTests {
    @Test func digitalZoomLinesSaySo() {
        let change = ControlValueChange(control: "zoom", value: 2, origin: .person, time: Timestamp(microseconds: 1_500_000))
        var zoom = Control.digitalZoomSlider()
        zoom.value = 2
        let event = PipelineEvent.control(ControlReport(change: change, control: zoom))
        #expect(JSONLines.line(event).contains("\"digital\":true"), "\(JSONLines.line(event))")
        #expect(ReadableLines.line(event).hasSuffix("control   zoom 2.0× (digital)"), "\(ReadableLines.line(event))")
    }
}
