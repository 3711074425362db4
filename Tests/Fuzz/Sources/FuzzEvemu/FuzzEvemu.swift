// libFuzzer target: EvemuRecording.parse on arbitrary text (evemu-record output). Any
// input must either parse or throw an EvemuError naming the file, a line inside the text
// (or 0) and a problem; a parsed recording must survive what replay does with it (frames,
// device description). A crash or a hang is a finding.
import Evdev

#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEvemu(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
    do {
        let recording = try EvemuRecording.parse(text, file: "fuzz.evemu")
        let frames = Frame.split(recording.events)
        var count = 0
        for f in frames { count += f.events.count + 1 }
        if count > recording.events.count {
            fputs("fuzz-evemu: frames hold more events than the recording\n", stderr)
            abort()
        }
        _ = recording.description.codes.map(\.name)
    } catch {
        let e = error  // typed: EvemuError
        if e.file != "fuzz.evemu" || e.problem.isEmpty || e.line < 0 || e.line > lines + 1 {
            fputs("fuzz-evemu: unclear error: \(e) (line \(e.line) of \(lines))\n", stderr)
            abort()
        }
    }
    return 0
}
