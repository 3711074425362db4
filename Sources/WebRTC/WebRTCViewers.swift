#if canImport(Glibc)
import Glibc
#endif
import CGstRTSP
import LinuxIO
import LiveH264
import LiveView
import Logging
import Synchronization

/// Where WebRTC viewers' host candidates are and which servers they may use (the live view's
/// `[http]` table, docs/live-view.md#webrtc).
public struct WebRTCSettings: Sendable, Hashable {
    /// The address host candidates are on (the live view's); nil: every address of the machine.
    public var localAddress: String?
    public var stunServer: String?
    public var turnServer: String?
    /// Viewers at once; more are refused (503).
    public var maxViewers = 4
    /// A session whose connection is not up this long after its answer is ended.
    public var connectTimeout = Duration.seconds(30)

    public init() {}
}

/// WebRTC viewers of the camera's live H.264 (docs/live-view.md#webrtc): each answered
/// offer is a pipeline of its own (appsrc → h264parse → rtph264pay → webrtcbin, GStreamer's,
/// loaded with dlopen on the first offer: Sources/CGstRTSP/webrtc.c) fed by its own consumer
/// of the shared ``LiveH264Stream`` on a thread of its own. The consumer joins once ICE and
/// DTLS are up, so the picture starts at a keyframe; a viewer's keyframe request (PLI) joins
/// again. A session ends on `DELETE`, when its connection fails or closes, or when it is not
/// up within ``WebRTCSettings/connectTimeout``.
public final class WebRTCViewers: WHEPService {
    public let settings: WebRTCSettings
    let stream: LiveH264Stream
    let logger: Logger

    private struct State {
        /// Sessions by ID, `true` once asked to end; answers in progress hold a slot too.
        var sessions: [String: Bool] = [:]
        var answering = 0
        var stopping = false
    }
    private let state = Mutex(State())

    public init(settings: WebRTCSettings, stream: LiveH264Stream, logger: Logger) {
        self.settings = settings
        self.stream = stream
        self.logger = logger
    }

    /// Sessions now (answered and not yet ended).
    public var viewers: Int { state.withLock { $0.sessions.count } }

    public func answer(offer: String, completion: @escaping @Sendable (Result<WHEPAnswer, WHEPError>) -> Void) {
        let admitted = state.withLock { s -> Bool in
            guard !s.stopping, s.sessions.count + s.answering < settings.maxViewers else { return false }
            s.answering += 1
            return true
        }
        guard admitted else {
            return completion(
                .failure(WHEPError(.tooManyViewers, "as many WebRTC viewers as max-clients (\(settings.maxViewers)) already")))
        }
        // GStreamer's first load reads every plugin (seconds on a small board): never on the caller's thread.
        startThread(name: "evc-webrtc") { [self] in
            let result = makeSession(offer: offer)
            state.withLock { $0.answering -= 1 }
            completion(result)
        }
    }

    public func end(session: String) -> Bool {
        state.withLock { s in
            guard s.sessions[session] != nil else { return false }
            s.sessions[session] = true
            return true
        }
    }

    /// Ends every session (their threads finish within half a second).
    public func stop() {
        state.withLock { s in
            s.stopping = true
            for id in s.sessions.keys { s.sessions[id] = true }
        }
    }

    private struct Handle: @unchecked Sendable {
        // webrtc.c's session: used by its feeder thread alone after the answer, and freed there.
        let pointer: OpaquePointer
    }

    private func makeSession(offer: String) -> Result<WHEPAnswer, WHEPError> {
        let codec: SDPOffer.H264
        switch SDPOffer.h264(in: offer) {
        case .success(let c): codec = c
        case .failure(let e): return .failure(e)
        }
        var error = [CChar](repeating: 0, count: 512)
        var answer: UnsafeMutablePointer<CChar>?
        let session = evc_webrtc_answer(
            offer, Int32(codec.payloadType), settings.localAddress, settings.stunServer, settings.turnServer, 5000,
            &answer, &error, error.count)
        guard let session else {
            let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let loaded = evc_webrtc_load(nil, 0) == 0
            return .failure(WHEPError(loaded ? .badOffer : .unavailable, "webrtc: \(reason)"))
        }
        let sdp = answer.map { String(cString: $0) } ?? ""
        free(answer)
        let id = Self.newID()
        // Answered while stop() ran: born ended, so its feeder frees it at once instead of
        // keeping the encoder running after the shutdown.
        state.withLock { $0.sessions[id] = $0.stopping }
        feed(Handle(pointer: session), id: id)
        logger.info("live view: WebRTC viewer \(id) answered", metadata: ["webrtc.session": "\(id)"])
        return .success(WHEPAnswer(session: id, sdp: sdp))
    }

    /// The session's frames until it ends: from a keyframe once connected, again at each
    /// keyframe request.
    private func feed(_ handle: Handle, id: String) {
        startThread(name: "evc-webrtc-feed") { [self] in
            let session = handle.pointer
            let started = ContinuousClock.now
            var consumer: H264Consumer?
            var why = "ended"
            defer {
                consumer?.leave()
                evc_webrtc_free(session)
                state.withLock { _ = $0.sessions.removeValue(forKey: id) }
                logger.info("live view: WebRTC viewer \(id) \(why)", metadata: ["webrtc.session": "\(id)"])
            }
            while true {
                if state.withLock({ $0.sessions[id] ?? true }) { return }
                let end = evc_webrtc_closed(session)
                if end != 0 {
                    why = String(cString: evc_webrtc_end_reason(end))
                    return
                }
                guard evc_webrtc_connected(session) != 0 else {
                    if ContinuousClock.now - started > settings.connectTimeout {
                        why = "did not connect within \(settings.connectTimeout)"
                        return
                    }
                    usleep(50_000)
                    continue
                }
                if evc_webrtc_take_keyframe_request(session) != 0 || consumer == nil {
                    consumer = consumer?.rejoin() ?? stream.join()
                }
                guard let frame = consumer?.next(timeout: .milliseconds(500)) else { continue }
                let pushed = frame.bytes.withUnsafeBufferPointer {
                    evc_webrtc_push(session, $0.baseAddress, $0.count, frame.timestampMicroseconds)
                }
                if pushed < 0 {
                    why = String(cString: evc_webrtc_end_reason(evc_webrtc_closed(session)))
                    return
                }
            }
        }
    }

    static func newID() -> String {
        var g = SystemRandomNumberGenerator()
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: (0..<32).map { _ in hex[Int(g.next() & 15)] }, as: UTF8.self)
    }
}

/// What the answer needs from a viewer's offer: its H.264 (RFC 6184) with packetization
/// mode 1, the one webrtcbin's payloader sends. Pure.
enum SDPOffer {
    public struct H264: Sendable, Hashable {
        var payloadType: Int
        /// Six hex digits, as offered (the profile the viewer says it decodes).
        var profileLevelID: String
        public init(payloadType: Int, profileLevelID: String) {
            self.payloadType = payloadType
            self.profileLevelID = profileLevelID
        }
    }

    /// The offer's first video H.264 format with packetization mode 1, preferring the
    /// constrained baseline profile (42e0xx) that every browser decodes.
    public static func h264(in offer: String) -> Result<H264, WHEPError> {
        var inVideo = false
        var sawVideo = false
        var h264: [Int] = []
        var fmtp: [Int: [String: String]] = [:]
        for raw in offer.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            if line.hasPrefix("m=") {
                inVideo = line.hasPrefix("m=video ")
                sawVideo = sawVideo || inVideo
                continue
            }
            guard inVideo, line.hasPrefix("a=") else { continue }
            let attribute = line.dropFirst(2)
            if attribute.hasPrefix("rtpmap:") {
                let parts = attribute.dropFirst("rtpmap:".count).split(separator: " ", maxSplits: 1)
                if parts.count == 2, let pt = Int(parts[0]), parts[1].uppercased().hasPrefix("H264/90000") { h264.append(pt) }
            } else if attribute.hasPrefix("fmtp:") {
                let parts = attribute.dropFirst("fmtp:".count).split(separator: " ", maxSplits: 1)
                guard parts.count == 2, let pt = Int(parts[0]) else { continue }
                var values: [String: String] = [:]
                for pair in parts[1].split(separator: ";") {
                    let kv = pair.split(separator: "=", maxSplits: 1)
                    if kv.count == 2 { values[kv[0].trimmingCharacters(in: " ").lowercased()] = String(kv[1].trimmingCharacters(in: " ")) }
                }
                fmtp[pt] = values
            }
        }
        guard sawVideo else { return .failure(WHEPError(.badOffer, "the offer has no video")) }
        let usable = h264.compactMap { pt -> H264? in
            guard (96...127).contains(pt), let f = fmtp[pt], f["packetization-mode"] == "1", let profile = f["profile-level-id"],
                profile.utf8.count == 6, profile.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) })
            else { return nil }
            return H264(payloadType: pt, profileLevelID: profile)
        }
        guard let chosen = usable.first(where: { $0.profileLevelID.lowercased().hasPrefix("42e0") }) ?? usable.first else {
            return .failure(WHEPError(.badOffer, "the offer has no H.264 video with packetization-mode=1"))
        }
        return .success(chosen)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> Substring {
        var s = self
        while s.first == set { s = s.dropFirst() }
        while s.last == set { s = s.dropLast() }
        return s
    }
}
