import NIOCore
import NIOHTTP1

/// The long answers a connection keeps writing: `/stream.mjpg`'s frames and `/events`' lines
/// (docs/live-view.md).
extension HTTPConnection {
    /// Whether this viewer can take a frame now: its socket takes more and it holds none. The
    /// preview is encoded only while one can (``ViewerDemand``).
    var canTakeFrame: Bool {
        guard case .stream(pending: .none) = mode, let context else { return false }
        return context.channel.isWritable
    }

    /// A frame for a viewer: written now when the socket takes it, else kept as the newest
    /// (replacing an older one) until it does. A slow client drops frames; nothing piles up.
    func send(_ frame: PreviewFrame) {
        guard case .stream = mode, let context else { return }
        guard context.channel.isWritable else {
            mode = .stream(pending: frame)
            return
        }
        var header = context.channel.allocator.buffer(capacity: 160)
        header.writeString(Framing.partHeader(length: frame.jpeg.readableBytes, time: frame.time, sequence: frame.sequence))
        context.write(wrapOutboundOut(.body(.byteBuffer(header))), promise: nil)
        // The same storage for every viewer: ByteBuffer is copy-on-write and nobody writes to it.
        context.write(wrapOutboundOut(.body(.byteBuffer(frame.jpeg))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(server.partTrailer))), promise: nil)
    }

    /// An event for a listener; one that stops reading is closed once its queue is full.
    func sendEvent(_ buffer: ByteBuffer) {
        guard case .events(var queued) = mode, let context else { return }
        if context.channel.isWritable && queued.isEmpty {
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
            return
        }
        guard queued.count < Self.maximumQueuedEvents else {
            context.close(promise: nil)
            return
        }
        queued.append(buffer)
        mode = .events(queued: queued)
    }
}
