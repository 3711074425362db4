import Foundation

/// What the live view's page shows, read from a real browser (docs/live-view.md#webrtc): the
/// transport it chose, the picture's size, and the `<video>`'s time and the inbound video's
/// `getStats()` twice, `window` seconds apart (1.5 by default).
public struct LivePagePlayback: CustomStringConvertible {
    public let text: String
    private let values: [String: Any]

    /// A number the page gave; -1 when it gave none.
    public func number(_ key: String) -> Double { (values[key] as? NSNumber)?.doubleValue ?? -1 }
    public func string(_ key: String) -> String? { values[key] as? String }
    public var description: String { text }

    /// Waits (up to 30 s) for the page to choose its picture, then reads it.
    public init(_ browser: ChromiumPipe, session: String, window: Double = 1.5) throws {
        let script = """
            (async () => {
              const pause = () => new Promise(r => setTimeout(r, 100));
              for (let i = 0; i < 300 && !document.getElementById("view"); i++) await pause();
              const view = document.getElementById("view"), video = document.getElementById("video");
              for (let i = 0; i < 300 && !view.dataset.transport; i++) await pause();
              const inbound = async () => {
                let s = {};
                if (window.peer) (await window.peer.getStats()).forEach(r => { if (r.type === "inbound-rtp" && r.kind === "video") s = r; });
                return s;
              };
              const a = await inbound(), time0 = video.currentTime;
              await new Promise(r => setTimeout(r, \(Int(window * 1000))));
              const b = await inbound();
              return JSON.stringify({transport: view.dataset.transport || "", picture: view.dataset.picture || "",
                webrtcError: view.dataset.webrtcError || "", ice: view.dataset.ice || "", time0, time1: video.currentTime,
                decoded0: a.framesDecoded || 0, decoded1: b.framesDecoded || 0, received: b.framesReceived || 0,
                dropped: b.framesDropped || 0, pli: b.pliCount || 0, keyframes: b.keyFramesDecoded || 0});
            })()
            """
        text = try browser.evaluate(script, session: session, timeout: .seconds(60 + Int(window)))
        values = (try JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }
}
