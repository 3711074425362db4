#if canImport(Glibc)
import Glibc
#endif

extension String {
    /// printf-style text from the C library's `vsnprintf`: what Foundation's `String(format:)`
    /// does for numbers, without linking Foundation (and ICU) for it. As in C, `format` must
    /// take exactly `arguments` (no `%@`; a `%s` needs a C string pointer), so it is for formats
    /// written in code or checked first (`formatValue`).
    public init(cFormat format: String, _ arguments: any CVarArg...) {
        var capacity = 64
        while true {
            let (text, needed): (String?, Int32) = withVaList(arguments) { va in
                withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer in
                    let n = vsnprintf(buffer.baseAddress, capacity, format, va)
                    guard n >= 0, Int(n) < capacity else { return (nil, n) }
                    let bytes = UnsafeRawBufferPointer(start: buffer.baseAddress, count: Int(n))
                    return (String(decoding: bytes, as: UTF8.self), n)
                }
            }
            if let text {
                self = text
                return
            }
            guard needed >= 0 else {  // an output error (a bad conversion): nothing printable
                self = ""
                return
            }
            capacity = Int(needed) + 1  // the va_list is used up: format again, with room for all of it
        }
    }
}
