#if canImport(Glibc)
import Glibc
#endif
import Foundation
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
        ] {
            #expect(media.open(name) == nil, "\(name)")
        }
    }

    @Test func listingJSON() {
        let json = MediaDirectory.json([.init(name: "a \"b\".jpg", bytes: 10, modified: 1_700_000_000, kind: "photo")])
        #expect(json == #"{"files":[{"name":"a \"b\".jpg","kind":"photo","bytes":10,"modified":1700000000}]}"#)
    }
}
