@testable import EvcaptureDaemon
import EvcaptureTesting
import ServiceLifecycle
import Synchronization
import Testing

/// docs/architecture.md#start-and-stop: the daemon's parts are one ServiceGroup of named
/// services, stopped in the reverse of their order however the group ends.
@Suite struct DaemonServicesTests {
    /// Parts that note when they stop; `slow` parts take a moment to, so that a part that did
    /// not wait for the one after it would be seen stopping first.
    final class Stops: Sendable {
        let names = Mutex<[String]>([])
        func services(_ added: [String], work: [String: @Sendable () async -> Void] = [:]) -> DaemonServices {
            var services = DaemonServices()
            for name in added {
                services.add(name, work: work[name]) { [self] in
                    // Every other part takes a while: the order must not come from timing.
                    if name.count % 2 == 0 { try? await Task.sleep(for: .milliseconds(30)) }
                    names.withLock { $0.append(name) }
                }
            }
            return services
        }
        var stopped: [String] { names.withLock { $0 } }
    }

    /// Made in another order than their dependencies (the lines before the rig link), run in
    /// the declared one.
    static let made = ["input", "lines", "outputs", "rig", "actions", "booth", "live-view", "devices", "watcher"]
    static let reversed = ["watcher", "devices", "booth", "actions", "live-view", "outputs", "lines", "rig", "input"]

    @Test func theNamesFollowTheDeclaredOrderNotTheMakingOrder() {
        let services = Stops().services(Self.made)
        #expect(services.names == ["input", "rig", "lines", "outputs", "live-view", "actions", "booth", "devices", "watcher"])
        #expect(DaemonServices.order.first == "input" && DaemonServices.order.last == "watcher")
    }

    @Test func aGracefulShutdownStopsThemLastFirst() async throws {
        let stops = Stops()
        let group = stops.services(Self.made).group(logger: testLogger)
        let run = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(50))
        #expect(stops.stopped.isEmpty, "nothing stops before it is asked to")
        await group.triggerGracefulShutdown()
        try await run.value
        #expect(stops.stopped == Self.reversed)
    }

    /// Cancelled, the group asks every service at once: each still waits for the one after it.
    @Test func aCancelledGroupStopsThemLastFirstAllTheSame() async throws {
        let stops = Stops()
        let group = stops.services(Self.made).group(logger: testLogger)
        let run = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(50))
        run.cancel()
        _ = try? await run.value
        #expect(stops.stopped == Self.reversed)
    }

    /// A start that failed part-way: what was made stops, in order, and nothing else runs.
    @Test func stoppingAllAfterAFailedStartStopsWhatWasMadeLastFirst() async {
        let stops = Stops()
        await stops.services(["input", "lines", "actions", "booth"]).stopAll(logger: testLogger)
        #expect(stops.stopped == ["booth", "actions", "lines", "input"])
    }

    /// The watcher's work ending (its stream finished) shuts the whole group down, in order.
    @Test func aPartsWorkEndingShutsTheGroupDownInOrder() async throws {
        let stops = Stops()
        let (events, finish) = AsyncStream.makeStream(of: Int.self)
        let group = stops.services(["input", "lines", "devices", "watcher"], work: ["watcher": { for await _ in events {} }])
            .group(logger: testLogger)
        let run = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(50))
        #expect(stops.stopped.isEmpty)
        finish.finish()
        try await run.value
        #expect(stops.stopped == ["watcher", "devices", "lines", "input"])
    }
}
