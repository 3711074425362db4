// libFuzzer target: EvemuRecording.parse on arbitrary text (evemu-record output). Any
// input must either parse or throw an EvemuError naming the file, a line inside the text
// (or 0) and a problem; a parsed recording must survive what replay does with it (frames,
// device description). A crash or a hang is a finding.
import Evdev
import Vocabulary

import FuzzDriver

#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEvemu(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    // every line break a parser may honour (\n, \r, \r\n counts twice here: an upper bound)
    let lines = text.unicodeScalars.filter { "\n\r\u{0B}\u{0C}\u{85}\u{2028}\u{2029}".unicodeScalars.contains($0) }.count + 1
    do {
        let recording = try EvemuRecording.parse(text, file: "fuzz.evemu")
        let frames = Frame.split(recording.events)
        var count = 0
        for f in frames { count += f.events.count + 1 }
        if count > recording.events.count {
            report("fuzz-evemu: frames hold more events than the recording\n")
            abort()
        }
        _ = recording.description.codes.map(\.name)
    } catch {
        let e = error  // typed: EvemuError
        if e.file != "fuzz.evemu" || e.problem.isEmpty || e.line < 0 || e.line > lines + 1 {
            report("fuzz-evemu: unclear error: \(e) (line \(e.line) of \(lines))\n")
            abort()
        }
    }
    return 0
}

/// Writes a finding to stderr (fd 2; the C `stderr` global is not concurrency-safe in Swift 6).
func report(_ text: String) {
    var t = text
    t.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

/// The program's main (SwiftPM links `main` to `<module>_main`): hands over to libFuzzer.
@_cdecl("fuzz_evemu_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        guard let data else { return 0 }
        return fuzzEvemu(data, size)
    }
}
