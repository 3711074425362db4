// libFuzzer target: Config.parse on arbitrary text. Any input must either parse or throw
// a ConfigError that names the file, a line inside the text (or 0) and a problem; a crash,
// a hang or another error is a finding.
import ConfigFile

import FuzzDriver

#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    // every line break a parser may honour (\n, \r, \r\n counts twice here: an upper bound)
    let lines = text.unicodeScalars.filter { "\n\r\u{0B}\u{0C}\u{85}\u{2028}\u{2029}".unicodeScalars.contains($0) }.count + 1
    do {
        _ = try Config.parse(text, file: "fuzz.toml")
    } catch {
        let e = error  // typed: ConfigError
        if e.file != "fuzz.toml" || e.problem.isEmpty || e.line < 0 || e.line > lines + 1 {
            report("fuzz-config: unclear error: \(e) (line \(e.line) of \(lines))\n")
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
@_cdecl("fuzz_config_main")
public func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
        guard let data else { return 0 }
        return fuzzConfig(data, size)
    }
}
