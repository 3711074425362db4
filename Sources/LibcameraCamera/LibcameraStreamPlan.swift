import CLibcameraLoader

/// libcamera's `StreamRole`, for the streams asked of a camera.
public enum LibcameraStreamRole: Int32, Sendable, Hashable {
    case raw = 0, stillCapture = 1, videoRecording = 2, viewfinder = 3
}

/// One stream asked of a camera: its role and format at a size.
public struct LibcameraStreamRequest: Sendable, Hashable {
    public var role: LibcameraStreamRole
    public var format: LibcameraFormat
    public init(role: LibcameraStreamRole, format: LibcameraFormat) {
        self.role = role
        self.format = format
    }
    var c: evc_lc_stream_request {
        evc_lc_stream_request(role: role.rawValue, fourcc: format.fourcc, width: UInt32(format.width), height: UInt32(format.height))
    }
}

/// What libcamera's `CameraConfiguration::validate()` made of the streams asked together.
public struct LibcameraValidation: Sendable, Hashable {
    public enum Status: Sendable, Hashable { case valid, adjusted, invalid }
    public var status: Status
    /// The streams as validate() left them, in the order asked (fewer when it dropped some).
    public var proposed: [LibcameraFormat]
    public init(status: Status, proposed: [LibcameraFormat]) {
        self.status = status
        self.proposed = proposed
    }
}

/// Where the live view's frames come from on a libcamera camera (docs/libcamera.md#two-streams).
public enum LiveViewStream: Sendable, Hashable, CustomStringConvertible {
    /// A second, small stream of the camera's, in the same requests as the capture stream.
    case own(LibcameraFormat)
    /// The capture stream's frames, scaled down by the live view; why.
    case fromMainStream(reason: String)

    public var description: String {
        switch self {
        case .own(let f): "live view: its own \(f.width)x\(f.height) \(f.name) stream"
        case .fromMainStream(let reason): "live view: from the main stream (\(reason))"
        }
    }
}

/// The streams asked of a libcamera camera: the capture stream (photos, videos) and, when a
/// live view wants frames smaller than it, a second one for the live view
/// (`StreamRole::Viewfinder`, as the Raspberry Pi's ISP gives beside its full-size output).
public struct LibcameraStreamPlan: Sendable, Hashable {
    /// The capture stream (``LibcameraFrameStream/choose(_:width:height:)``).
    public var main: LibcameraStreamRequest
    /// The live view's stream, or why there is none to ask for.
    public var viewfinder: Result<LibcameraStreamRequest, Reason>

    public struct Reason: Error, Sendable, Hashable { public var text: String }

    /// The formats the live view takes from a second stream, in the order asked: the 4:2:0
    /// planar YUV a Pi's low-resolution output gives (encoded as it is), NV12, YUYV, MJPEG.
    static let viewfinderFormats = [fourcc("YU12"), fourcc("NV12"), fourcc("YUYV"), fourcc("MJPG")]

    /// `liveViewWidth`: the live view's `preview-width`, nil without a live view. Its stream is
    /// that wide with the capture stream's aspect ratio (even sides), asked only when
    /// narrower than the capture stream.
    public init(main: LibcameraFormat, liveViewWidth: Int?) {
        self.main = LibcameraStreamRequest(role: .videoRecording, format: main)
        guard let liveViewWidth else {
            viewfinder = .failure(Reason(text: "no live view configured"))
            return
        }
        let width = liveViewWidth & ~1
        guard width >= 2, width < main.width, main.height > 0 else {
            viewfinder = .failure(
                Reason(text: "the main stream, \(main.width)x\(main.height), is no wider than preview-width \(liveViewWidth)"))
            return
        }
        let height = max(2, Int((Double(width) * Double(main.height) / Double(main.width) / 2).rounded()) * 2)
        viewfinder = .success(
            LibcameraStreamRequest(
                role: .viewfinder, format: LibcameraFormat(fourcc: Self.viewfinderFormats[0], width: width, height: height)))
    }

    /// The streams to validate together: the capture stream, then the live view's.
    public var requests: [LibcameraStreamRequest] {
        switch viewfinder {
        case .success(let second): [main, second]
        case .failure: [main]
        }
    }

    /// What the live view gets, given validate()'s verdict on ``requests``: its own stream
    /// when the camera keeps the second one, in a format the live view takes and smaller
    /// than the capture stream (a size aligned, NV12 for YUV420: taken as the camera adjusts
    /// it); else the main stream, saying why (the camera dropped it, refuses the pair,
    /// changes the capture stream's format, or offers a format the live view cannot take).
    public func decide(_ validation: LibcameraValidation) -> LiveViewStream {
        if case .failure(let reason) = viewfinder { return .fromMainStream(reason: reason.text) }
        if validation.status == .invalid {
            return .fromMainStream(reason: "the camera refuses a second stream beside it")
        }
        guard validation.proposed.count >= 2 else {
            return .fromMainStream(reason: "the camera gives one stream")
        }
        let (first, second) = (validation.proposed[0], validation.proposed[1])
        guard first.fourcc == main.format.fourcc else {
            return .fromMainStream(reason: "with a second stream the camera would change the main stream to \(first.name)")
        }
        guard Self.viewfinderFormats.contains(second.fourcc) else {
            return .fromMainStream(reason: "the camera offers the second stream in \(second.name), which the live view does not take")
        }
        guard second.width > 0, second.height > 0, second.width < first.width else {
            return .fromMainStream(
                reason: "the camera proposes \(second.width)x\(second.height) for the second stream, no smaller than the main one")
        }
        return .own(second)
    }
}

extension Libcamera {
    /// What camera `id` makes of `streams` asked together (validate(), without acquiring it).
    public func validate(_ streams: [LibcameraStreamRequest], of id: String) throws(LibcameraError) -> LibcameraValidation {
        var error = evc_lc_error()
        var status: Int32 = 0
        var proposed = [evc_lc_stream_config](repeating: evc_lc_stream_config(), count: Int(EVC_LC_MAX_STREAMS))
        var count = 0
        let requests = streams.map(\.c)
        guard evc_lc_camera_validate(manager, id, requests, requests.count, &status, &proposed, &count, &error) == 0 else {
            throw LibcameraError(error)
        }
        let verdict: LibcameraValidation.Status =
            switch Int(status) {
            case EVC_LC_CONFIG_VALID: .valid
            case EVC_LC_CONFIG_ADJUSTED: .adjusted
            default: .invalid
            }
        return LibcameraValidation(
            status: verdict,
            proposed: proposed.prefix(count).map { LibcameraFormat(fourcc: $0.fourcc, width: Int($0.width), height: Int($0.height)) })
    }

    /// The live view's source on camera `id` for `plan`: validate()'s verdict on its streams
    /// (``LibcameraStreamPlan/decide(_:)``); the main stream when there is no second one to ask.
    public func liveViewStream(of id: String, plan: LibcameraStreamPlan) -> LiveViewStream {
        guard case .success = plan.viewfinder else { return plan.decide(LibcameraValidation(status: .valid, proposed: [])) }
        do {
            return plan.decide(try validate(plan.requests, of: id))
        } catch {
            return .fromMainStream(reason: "validating two streams: \(error.message)")
        }
    }

    /// The same for the capture stream ``LibcameraFrameStream`` would choose at `width`×`height`
    /// (the daemon's start-up line says it before the stream starts).
    public func liveViewStream(of id: String, width: Int?, height: Int?, liveViewWidth: Int?) -> LiveViewStream {
        guard let formats = try? formats(of: id), let main = LibcameraFrameStream.choose(formats, width: width, height: height) else {
            return .fromMainStream(reason: "the camera offers no format for a capture stream")
        }
        return liveViewStream(of: id, plan: LibcameraStreamPlan(main: main, liveViewWidth: liveViewWidth))
    }
}
