import Testing

@testable import LiveView

/// `Range: bytes=…` against a 1000-byte file: both ends of a range, suffixes, what is
/// unsatisfiable (416) and what is malformed (ignored: the whole file).
@Suite struct ByteRangeTests {
    func range(_ header: String?, size: Int = 1000, ifRange: String? = nil) -> ByteRange {
        ByteRange(header: header, ifRange: ifRange, size: size)
    }

    @Test func noHeaderIsTheWholeFile() {
        #expect(range(nil) == .whole)
    }

    @Test func bothEndsOfTheFile() {
        #expect(range("bytes=0-0") == .part(first: 0, last: 0))
        #expect(range("bytes=0-") == .part(first: 0, last: 999))
        #expect(range("bytes=0-999") == .part(first: 0, last: 999))
        #expect(range("bytes=999-999") == .part(first: 999, last: 999))
        #expect(range("bytes=999-") == .part(first: 999, last: 999))
        #expect(range("bytes=100-199") == .part(first: 100, last: 199))
        // A last byte past the end is the end.
        #expect(range("bytes=500-1000") == .part(first: 500, last: 999))
        #expect(range("bytes=500-99999999999999999999999") == .part(first: 500, last: 999))
    }

    @Test func suffixes() {
        #expect(range("bytes=-1") == .part(first: 999, last: 999))
        #expect(range("bytes=-500") == .part(first: 500, last: 999))
        #expect(range("bytes=-1000") == .part(first: 0, last: 999))
        #expect(range("bytes=-5000") == .part(first: 0, last: 999))
    }

    @Test func pastTheEndIsUnsatisfiable() {
        #expect(range("bytes=1000-") == .unsatisfiable)
        #expect(range("bytes=1000-2000") == .unsatisfiable)
        #expect(range("bytes=99999999999999999999999-") == .unsatisfiable)
        #expect(range("bytes=-0") == .unsatisfiable)
        #expect(range("bytes=0-", size: 0) == .unsatisfiable)
        #expect(range("bytes=-10", size: 0) == .unsatisfiable)
    }

    @Test func malformedOrUnsupportedIsIgnored() {
        for header in [
            "", "bytes", "bytes=", "bytes=-", "bytes=abc", "bytes=1-a", "bytes=a-1", "bytes=5-4", "bytes=+1-2", "bytes=1--2", "bytes=-1-2",
            "bytes=0x10-", "items=0-10", "bytes 0-10", "bytes=0-1,5-6", "bytes=0-1, 5-6", "bytes=1 - 2",
        ] {
            #expect(range(header) == .whole, "\(header)")
        }
    }

    @Test func unitAndSpacesAsHTTPAllows() {
        #expect(range("Bytes=0-9") == .part(first: 0, last: 9))
        #expect(range("  bytes=0-9 \t") == .part(first: 0, last: 9))
    }

    /// No validators are given, so an `If-Range` can never match: the whole file.
    @Test func ifRangeGetsTheWholeFile() {
        #expect(range("bytes=0-9", ifRange: "\"etag\"") == .whole)
    }
}
