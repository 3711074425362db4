#if canImport(Glibc)
import Glibc
#endif

/// A `/dev/videoN` node as discovery sees it, from udev (the Udev module's enumeration and
/// hotplug events) or, when libudev cannot enumerate, from the sysfs scan
/// ``videoNodes(sysfs:dev:byID:)``.
public struct VideoNode: Hashable, Sendable {
    /// `/dev/videoN`
    public var path: String
    /// sysfs `name` (the card name for most drivers).
    public var name: String
    /// sysfs `index`: 0 for a device's main node (uvcvideo's metadata node is 1).
    public var index: Int?
    /// The `/dev/v4l/by-id/…` link pointing to it, when udev made one.
    public var byID: String?
    /// udev's `ID_V4L_CAPABILITIES` words (`capture`, `video_output`, ...); nil when unknown
    /// (no udevd, or the sysfs scan): then only opening the node tells.
    public var udevCapabilities: Set<String>?

    public init(path: String, name: String, index: Int?, byID: String? = nil, udevCapabilities: Set<String>? = nil) {
        self.path = path
        self.name = name
        self.index = index
        self.byID = byID
        self.udevCapabilities = udevCapabilities
    }
}

/// Every `video*` entry of `/sys/class/video4linux`, in node-number order, with its by-id link.
/// An unreadable or missing sysfs gives an empty list. The fallback for when libudev cannot
/// enumerate.
public func videoNodes(
    sysfs: String = "/sys/class/video4linux", dev: String = "/dev", byID: String = "/dev/v4l/by-id"
) -> [VideoNode] {
    let links = byIDLinks(byID)
    let entries = directoryEntries(sysfs).filter { $0.hasPrefix("video") }
    let numbered = entries.compactMap { e -> (Int, String)? in Int(e.dropFirst(5)).map { ($0, e) } }
    return numbered.sorted { $0.0 < $1.0 }.map { _, entry in
        let path = dev + "/" + entry
        return VideoNode(
            path: path,
            name: readLine(sysfs + "/" + entry + "/name") ?? entry,
            index: readLine(sysfs + "/" + entry + "/index").flatMap { Int($0) },
            byID: links[entry])
    }
}

/// The first `/dev/v4l/by-id/…` link (in sort order, as udev's `DEVLINKS` sorted) that leads
/// to `node` (`/dev/videoN`), or nil: one directory listing, where asking libudev means
/// enumerating every video device.
public func byIDLink(to node: String, byID: String = "/dev/v4l/by-id") -> String? {
    guard let name = node.split(separator: "/").last else { return nil }
    return byIDLinks(byID)[String(name)]
}

/// The `/dev/v4l/by-id` links, keyed by the node name they point to (`video0`).
func byIDLinks(_ dir: String) -> [String: String] {
    var out: [String: String] = [:]
    for link in directoryEntries(dir).sorted() {
        let full = dir + "/" + link
        guard let target = readLink(full), let node = target.split(separator: "/").last else { continue }
        // Several links can point at one node (by serial, by model); keep the first in sort order.
        if out[String(node)] == nil { out[String(node)] = full }
    }
    return out
}

/// Resolves a symlink one level (`/dev/v4l/by-id/x` → `../../video0`).
func readLink(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: 4096)
    let n = readlink(path, &buffer, buffer.count - 1)
    guard n > 0 else { return nil }
    return buffer.withUnsafeBufferPointer { String(decoding: UnsafeRawBufferPointer($0).prefix(n), as: UTF8.self) }
}

/// The `/dev/videoN` path a `/dev/v4l/by-id/…` (or any) link leads to, or the path itself.
public func resolvedNode(_ path: String) -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    guard realpath(path, &buffer) != nil else { return path }
    return string(fromCBuffer: buffer)
}

private func directoryEntries(_ path: String) -> [String] {
    guard let dir = opendir(path) else { return [] }
    defer { closedir(dir) }
    var out: [String] = []
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { out.append(name) }
    }
    return out
}

private func readLine(_ path: String) -> String? {
    guard let f = fopen(path, "r") else { return nil }
    defer { fclose(f) }
    var buffer = [CChar](repeating: 0, count: 256)
    guard fgets(&buffer, Int32(buffer.count), f) != nil else { return nil }
    var s = string(fromCBuffer: buffer)
    while s.last == "\n" { s.removeLast() }
    return s
}
