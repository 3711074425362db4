import Vocabulary
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Frames
import Recording

// A click's photo prepared at `began` (docs/behaviour.md#the-moment-of-the-press: `began` is
// the moment to prepare, `ended` the moment a click is decided). The photo is the ring frame
// nearest the press either way; preparing it at the press only moves the work — waiting for
// that frame, the JPEG encode with EXIF, writing it to a hidden `.part` file — into the hold,
// so at the click only the commit is left (fsync, rename under the final name, directory
// fsync).

/// Where a photo's frame comes from: the capture stream's ring (``FrameSource``), or a fake
/// in tests.
public protocol NearestFrameSource: Sendable {
    /// The frame nearest `time`, waiting at most `timeout`; a failure is the stream's
    /// (its `StreamingError`, the floor's `SystemError` under the stream's name).
    func frame(nearest time: Timestamp, timeout: Duration) throws(SystemError) -> RingFrame
    /// The time of the camera's frame nearest `time`, from its cadence, without waiting
    /// (nil: no cadence known); a timelapse starts on it (docs/booth.md#timelapse).
    func frameTime(nearest time: Timestamp) -> Timestamp?
}

extension FrameSource: NearestFrameSource {}

/// What the photo worker is asked to do, in the order the presses happened.
enum PhotoCommand: Sendable {
    /// A press began on a button whose click takes a photo: prepare the photo of the frame
    /// nearest `moment` (the press's kernel time).
    case prepare(press: PressID, moment: Timestamp)
    /// A photo was decided (a click, a trigger message); `prepared`: its press was being
    /// prepared and the prepared file is to be committed; `shotReported`: the booth clock
    /// reported the shot at its moment already.
    case take(ActionTrigger, prepared: Bool, shotReported: Bool)
    /// The press became something else (a long press, a double click, cancelled, released
    /// without a click): its prepared file is removed.
    case discard(press: PressID)
}

/// Which presses have a photo being prepared and what was decided for them. Shared by the
/// input side (``ActionRunner/handle(_:)``, which decides) and the photo worker (which
/// prepares, commits and discards): a press enters at `began` and leaves when the worker
/// has committed or discarded its file, so at most `limit` photos are prepared at once and
/// each press has at most one.
final class PhotoPreparations: Sendable {
    enum Fate: Sendable, Equatable {
        /// Being prepared; nothing decided yet.
        case pending
        /// The click came: the prepared file is to be committed.
        case claimed
        /// The press became something else: the file is to be removed.
        case discarded
    }
    private let fates = Mutex<[PressID: Fate]>([:])
    let limit: Int

    init(limit: Int) { self.limit = max(1, limit) }

    /// At `began`: whether to prepare this press (not when `limit` presses are in flight:
    /// its click then takes the photo as if nothing was prepared).
    func begin(_ press: PressID) -> Bool {
        fates.withLock { f in
            guard f[press] == nil, f.count < limit else { return false }
            f[press] = .pending
            return true
        }
    }

    /// The click: true when the press's photo is being prepared (it is now the worker's to commit).
    func claim(_ press: PressID) -> Bool {
        fates.withLock { f in
            guard f[press] == .pending else { return false }
            f[press] = .claimed
            return true
        }
    }

    /// The press became something else: true when its preparation is to be discarded (the
    /// caller queues the discard).
    func discard(_ press: PressID) -> Bool {
        fates.withLock { f in
            guard f[press] == .pending else { return false }
            f[press] = .discarded
            return true
        }
    }

    /// Whether the photo of `press` may still be wanted (the worker skips work for the others).
    func isWanted(_ press: PressID) -> Bool { fates.withLock { $0[press].map { $0 != .discarded } ?? false } }

    /// The worker has committed or removed the file of `press`.
    func done(_ press: PressID) { fates.withLock { _ = $0.removeValue(forKey: press) } }

    /// Presses between `began` and the worker's commit or discard.
    var inFlight: Int { fates.withLock { $0.count } }
}

/// The photo worker's prepared files: used on the worker's thread only (an ``AtomicFile``
/// belongs to one thread).
final class PreparedPhotos {
    private struct Prepared {
        var moment: Timestamp
        var zoom: Double
        var outcome: Result<(file: AtomicFile, photo: PhotoResult), RecordingError>
    }
    private var prepared: [PressID: Prepared] = [:]
    private let frames: any NearestFrameSource
    private let settings: CaptureSettings
    private let ledger: PhotoPreparations

    init(frames: any NearestFrameSource, settings: CaptureSettings, ledger: PhotoPreparations) {
        self.frames = frames
        self.settings = settings
        self.ledger = ledger
    }

    /// Prepares the photo of `press`: the frame nearest `moment`, encoded (or the MJPEG frame
    /// as sent) and cropped to `zoom` exactly as ``Photo/save(_:_:_:)`` does, with EXIF,
    /// written to a hidden `.part` file. A failure is kept for the click to report. Work for
    /// a press that has become something else meanwhile is skipped.
    func prepare(press: PressID, moment: Timestamp, zoom: Double) {
        guard ledger.isWanted(press) else { return }
        let ring: RingFrame
        do throws(SystemError) { ring = try frames.frame(nearest: moment, timeout: settings.frameTimeout) } catch {
            prepared[press] = Prepared(moment: moment, zoom: zoom, outcome: .failure(.camera(error)))
            return
        }
        // A long press decided while the frame was awaited: no encode for nothing.
        guard ledger.isWanted(press) else { return }
        let outcome = Result { () throws(RecordingError) -> (file: AtomicFile, photo: PhotoResult) in
            let image = try Photo.encode(ring, settings, zoom: zoom)
            let file: AtomicFile
            do throws(FileWriteError) {
                // Named at the commit: the name's tokens ({time}, {trigger}) belong to the decision.
                file = try AtomicFile(directory: settings.outputDirectory, finalName: "prepared")
            } catch { throw .file(error) }
            do throws(FileWriteError) { try file.write(image.jpeg) } catch {
                // A full disk: the partial file goes now, holding no space until the click.
                file.abandon()
                throw .file(error)
            }
            return (
                file,
                PhotoResult(
                    path: "", width: image.width, height: image.height, bytes: image.jpeg.count, frameTime: ring.time,
                    sequence: ring.frame.sequence)
            )
        }
        prepared[press] = Prepared(moment: moment, zoom: zoom, outcome: outcome)
    }

    /// The click of `press`: its prepared photo committed under the name `request` gives,
    /// or its preparation's camera or encoder error. nil when there is nothing to commit
    /// that matches what the click asks for (another moment or zoom), or the preparation
    /// failed for the disk: the caller then takes the photo the usual way (space may have
    /// been freed since the press).
    func commit(press: PressID, moment: Timestamp, request: CaptureRequest) -> Result<PhotoResult, RecordingError>? {
        defer { ledger.done(press) }
        guard let p = prepared.removeValue(forKey: press) else { return nil }
        guard p.moment == moment, p.zoom == request.zoom else {
            if case .success(let made) = p.outcome { made.file.abandon() }
            return nil
        }
        switch p.outcome {
        case .failure(.file):
            return nil
        case .failure(let error):
            return .failure(error)
        case .success(let (file, photo)):
            let name = settings.photoPattern.name(
                time: request.time, press: request.press, action: request.action, kind: "photo", trigger: request.trigger)
            var result = photo
            do { result.path = try file.commit(as: name) } catch {
                file.abandon()
                return .failure(.file(error))
            }
            result.trigger = request.trigger
            return .success(result)
        }
    }

    /// Removes the prepared file of `press` (the press became something else).
    func discard(press: PressID) {
        defer { ledger.done(press) }
        if case .success(let made) = prepared.removeValue(forKey: press)?.outcome { made.file.abandon() }
    }

    /// Removes every prepared file (the worker ends).
    func discardAll() {
        for press in Array(prepared.keys) { discard(press: press) }
    }
}
