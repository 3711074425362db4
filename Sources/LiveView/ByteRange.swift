/// What a `Range` request header asks of a file of `size` bytes (RFC 9110, section 14): a
/// browser's `<video>` asks for byte ranges to start and to seek. One range is served; a
/// header that is not a single well-formed byte range is ignored, as the RFC allows, and
/// the whole file is sent.
enum ByteRange: Equatable {
    /// No range asked for, or one that is ignored (another unit, malformed, several ranges,
    /// an `If-Range` this server cannot match: it gives no validators): 200 and every byte.
    case whole
    /// 206 with `Content-Range: bytes first-last/size`.
    case part(first: Int, last: Int)
    /// 416 with `Content-Range: bytes */size`: the range starts past the end, or asks for
    /// the last 0 bytes, or the file is empty.
    case unsatisfiable

    init(header: String?, ifRange: String? = nil, size: Int) {
        guard let header, ifRange == nil else {
            self = .whole
            return
        }
        let text = header.trimmingSpaces
        // The unit is case-insensitive; any other unit is ignored.
        guard text.utf8.count > 6, text.prefix(6).lowercased() == "bytes=" else {
            self = .whole
            return
        }
        let spec = String(text.dropFirst(6)).trimmingSpaces
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else {
            self = .whole
            return
        }
        let firstText = String(spec[..<dash])
        let lastText = String(spec[spec.index(after: dash)...])
        if firstText.isEmpty {
            // `bytes=-N`: the last N bytes.
            guard let suffix = Self.number(lastText) else {
                self = .whole
                return
            }
            guard suffix > 0, size > 0 else {
                self = .unsatisfiable
                return
            }
            self = .part(first: size - min(suffix, size), last: size - 1)
            return
        }
        guard let first = Self.number(firstText) else {
            self = .whole
            return
        }
        var last = Int.max
        if !lastText.isEmpty {
            guard let l = Self.number(lastText), l >= first else {
                self = .whole
                return
            }
            last = l
        }
        guard first < size else {
            self = .unsatisfiable
            return
        }
        self = .part(first: first, last: min(last, size - 1))
    }

    /// Decimal digits only (no sign, no spaces); a number past `Int.max` is `Int.max`,
    /// which no file reaches.
    private static func number(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(text) ?? Int.max
    }
}

extension String {
    /// Without the spaces and tabs HTTP allows around a field's value.
    fileprivate var trimmingSpaces: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return String(s)
    }
}
