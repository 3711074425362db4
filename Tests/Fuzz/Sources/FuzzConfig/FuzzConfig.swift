// libFuzzer target: Config.parse on arbitrary text. Any input must either parse or throw
// a ConfigError that names the file, a line inside the text (or 0) and a problem; a crash,
// a hang or another error is a finding.
import Bridge

#if canImport(Glibc)
import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfig(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
    do {
        _ = try Config.parse(text, file: "fuzz.toml")
    } catch {
        let e = error  // typed: ConfigError
        if e.file != "fuzz.toml" || e.problem.isEmpty || e.line < 0 || e.line > lines + 1 {
            fputs("fuzz-config: unclear error: \(e) (line \(e.line) of \(lines))\n", stderr)
            abort()
        }
    }
    return 0
}
