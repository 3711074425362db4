#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NIOCore
@testable import LiveView
import Testing

@Suite struct MediaDirectoryTests {
    @Test func onlyRegularFilesOfTheDirectoryItself() throws {
        var template = Array("/tmp/liveview-media-XXXXXX".utf8CString)
        let base = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: base) }
        let dir = base + "/out"
        let outside = base + "/secret.jpg"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data([0xFF, 0xD8, 0xFF, 0xD9]).write(to: URL(fileURLWithPath: dir + "/photo.jpg"))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir + "/clip.avi"))
        try Data([4, 5, 6]).write(to: URL(fileURLWithPath: dir + "/clip.mp4"))
        try Data("notes".utf8).write(to: URL(fileURLWithPath: dir + "/notes.txt"))
        try Data([9]).write(to: URL(fileURLWithPath: dir + "/.evcapture-2.jpg.part"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside))
        try FileManager.default.createDirectory(atPath: dir + "/folder.jpg", withIntermediateDirectories: true)
        #expect(symlink(outside, dir + "/link.jpg") == 0)
        #expect(symlink("/etc/passwd", dir + "/passwd.jpg") == 0)

        let media = MediaDirectory(path: dir)
        #expect(Set(media.list().map(\.name)) == ["photo.jpg", "clip.avi", "clip.mp4"])
        #expect(media.list().first { $0.name == "clip.avi" }?.kind == "video")
        #expect(media.list().first { $0.name == "clip.mp4" }?.kind == "video")
        // What a browser needs to play it: `nosniff` is sent, so the type must be right.
        #expect(MediaDirectory.contentType(of: "clip.mp4") == "video/mp4")
        #expect(MediaDirectory.contentType(of: "CLIP.MP4") == "video/mp4")
        #expect(MediaDirectory.contentType(of: "clip.avi") == "video/x-msvideo")
        #expect(MediaDirectory.contentType(of: "photo.jpg") == "image/jpeg")

        let photo = try #require(media.open("photo.jpg"))
        #expect(photo.bytes == 4)
        close(photo.fd)
        for name in [
            "link.jpg", "passwd.jpg", "folder.jpg", "../secret.jpg", "..", ".", "", ".evcapture-2.jpg.part", "/etc/passwd", "nothing.jpg",
            "notes.txt",
        ] {
            #expect(media.open(name) == nil, "\(name)")
        }
    }

    @Test func listingJSON() {
        let json = MediaDirectory.json([.init(name: "a \"b\".jpg", bytes: 10, modified: 1_700_000_000, kind: "photo")])
        #expect(json == #"{"files":[{"name":"a \"b\".jpg","kind":"photo","bytes":10,"modified":1700000000}]}"#)
    }

    /// One rule for the listing and /media/: names a header could not carry (CR, LF), names
    /// that are not UTF-8 and files the daemon does not write are in neither.
    @Test func oddNamesAreNeitherListedNorServed() throws {
        var template = Array("/tmp/liveview-names-XXXXXX".utf8CString)
        let dir = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func create(_ name: [UInt8]) {
            let path = Array(dir.utf8) + [UInt8(ascii: "/")] + name + [0]
            let fd = path.withUnsafeBufferPointer { p in
                p.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT, 0o644) }
            }
            #expect(fd >= 0)
            close(fd)
        }
        create(Array("a\r\nSet-Cookie: x.jpg".utf8))
        create([0x66, 0xFF, 0x2E, 0x6A, 0x70, 0x67])  // "f\xFF.jpg"
        create(Array("notes.txt".utf8))
        create(Array("Straße ok.jpg".utf8))
        let media = MediaDirectory(path: dir)
        #expect(media.list().map(\.name) == ["Straße ok.jpg"])
        #expect(media.open("a\r\nSet-Cookie: x.jpg") == nil && media.open("notes.txt") == nil)
        let ok = try #require(media.open("Straße ok.jpg"))
        close(ok.fd)
        #expect(
            MediaDirectory.contentDisposition("Straße ok.jpg")
                == "inline; filename=\"Stra__e ok.jpg\"; filename*=UTF-8\'\'Stra%C3%9Fe%20ok.jpg")
        #expect(MediaDirectory.contentDisposition("a\"b\\.jpg") == "inline; filename=\"a_b_.jpg\"; filename*=UTF-8\'\'a%22b%5C.jpg")
    }

    /// The listing is kept while the directory is unchanged, and made again when it changes.
    @Test func theListingIsCachedUntilTheDirectoryChanges() throws {
        var template = Array("/tmp/liveview-cache-XXXXXX".utf8CString)
        let dir = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data([1]).write(to: URL(fileURLWithPath: dir + "/a.jpg"))
        // The directory last changed a minute ago.
        var times = [timespec(tv_sec: time(nil) - 60, tv_nsec: 0), timespec(tv_sec: time(nil) - 60, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, dir, &times, 0) == 0)
        let media = MediaDirectory(path: dir)
        let first = String(buffer: media.listing())
        #expect(first.contains("\"a.jpg\""))
        // A change the directory's time does not show (a file's size) is not seen: cached.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir + "/a.jpg"))
        #expect(utimensat(AT_FDCWD, dir, &times, 0) == 0)
        #expect(String(buffer: media.listing()) == first)
        // A new file changes the directory: listed.
        try Data([1]).write(to: URL(fileURLWithPath: dir + "/b.jpg"))
        let second = String(buffer: media.listing())
        #expect(second.contains("\"b.jpg\"") && second.contains("\"bytes\":3"), "\(second)")
    }

    /// A directory that changed just now (by the wall clock, `wallClockNow()`): its listing is
    /// not kept, so a change within the same second is seen.
    @Test func aListingOfADirectoryChangedJustNowIsNotKept() throws {
        var template = Array("/tmp/liveview-fresh-XXXXXX".utf8CString)
        let dir = try #require(template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }.map { String(cString: $0) })
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data([1]).write(to: URL(fileURLWithPath: dir + "/a.jpg"))
        // The directory's time is now, set just before each listing.
        var times = [timespec(tv_sec: time(nil), tv_nsec: 0), timespec(tv_sec: time(nil), tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, dir, &times, 0) == 0)
        let media = MediaDirectory(path: dir)
        #expect(String(buffer: media.listing()).contains("\"bytes\":1"))
        // The same directory time, a different file: made again.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir + "/a.jpg"))
        #expect(utimensat(AT_FDCWD, dir, &times, 0) == 0)
        let again = String(buffer: media.listing())
        #expect(again.contains("\"bytes\":3"), "\(again)")
    }

    /// Kept once the change is more than a whole second behind the listing, at both ends.
    @Test func aListingIsKeptOnlyOnceItsChangeIsMoreThanASecondOld() {
        #expect(!MediaDirectory.keepsListing(changedAt: 1_000, now: 1_000))
        #expect(!MediaDirectory.keepsListing(changedAt: 1_000, now: 1_001.999_999))
        #expect(MediaDirectory.keepsListing(changedAt: 1_000, now: 1_002))
        #expect(MediaDirectory.keepsListing(changedAt: 1_000, now: 1_000_000))
        // A directory changed in the future (a clock set back): never kept.
        #expect(!MediaDirectory.keepsListing(changedAt: 2_000, now: 1_000))
    }
}
