/// The live view's WebRTC viewers as the HTTP side sees them (docs/live-view.md#webrtc):
/// an offer answered, a session ended. The daemon gives one (Sources/WebRTC); the live view
/// itself never loads GStreamer.
public protocol WHEPService: Sendable {
    /// Answers a viewer's SDP offer, off the caller's thread; `completion` runs on another
    /// thread once the answer (with its ICE candidates) is ready, or with why there is none.
    func answer(offer: String, completion: @escaping @Sendable (Result<WHEPAnswer, WHEPError>) -> Void)
    /// Ends a session; false when there is no such session (it ended, or never was).
    func end(session: String) -> Bool
}

/// A WHEP answer: the session's ID (its resource is `/api/whep/ID`) and the SDP.
public struct WHEPAnswer: Sendable, Hashable {
    public var session: String
    public var sdp: String
    public init(session: String, sdp: String) {
        self.session = session
        self.sdp = sdp
    }
}

public struct WHEPError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// The offer cannot be answered (not SDP, no H.264 video): 400.
        case badOffer
        /// As many WebRTC viewers as `max-clients` already: 503.
        case tooManyViewers
        /// WebRTC is not available here (GStreamer or its WebRTC plugins missing): 503.
        case unavailable
    }
    public var code: Code
    public var message: String
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { message }
}
