import Testing
@testable import Camera

/// The camera session's events are a bounded queue (docs/behaviour.md#reliability): with nobody taking
/// them, a flood of control changes made elsewhere keeps the newest 256, the last one last.
@Suite struct CameraSessionBoundsTests {
    @Test func aFloodOfEventsKeepsTheNewest() async {
        let (events, continuation) = CameraSession.makeEventStream()
        for i in 0..<10_000 {
            continuation.yield(.restored(control: "zoom_absolute", id: CameraControlID(9_963_789), value: Int64(i)))
        }
        continuation.yield(.stopped(.cameraRemoved))
        continuation.finish()
        var kept: [CameraSession.Event] = []
        for await e in events { kept.append(e) }
        #expect(kept.count == CameraSession.eventBufferLimit)
        #expect(kept.last == .stopped(.cameraRemoved), "the newest is never the one dropped")
        #expect(kept.first == .restored(control: "zoom_absolute", id: CameraControlID(9_963_789), value: Int64(10_000 - 255)))
    }
}
