import Vocabulary

/// Optional acceleration of fast spins (off by default).
///
/// The curve: the rate of a slide is its detents divided by the time since the previous
/// slide (at least 1 ms). At or below `startRate` detents per second a detent is one step;
/// above it, each detent counts `min(maxMultiplier, ⌊rate / startRate⌋)` steps. A slide more
/// than `window` after the previous one always counts plainly.
public struct SliderAcceleration: Sendable, Hashable {
    var startRate: Double
    var maxMultiplier: Int
    public var window: Duration

    public init(startRate: Double = 15, maxMultiplier: Int = 4, window: Duration = .milliseconds(250)) {
        precondition(startRate > 0 && maxMultiplier >= 1)
        self.startRate = startRate
        self.maxMultiplier = maxMultiplier
        self.window = window
    }

    /// The steps `detents` give when the previous slide was `sincePrevious` ago.
    public func steps(for detents: Int, sincePrevious: Duration?) -> Int {
        guard let dt = sincePrevious, dt <= window else { return detents }
        let seconds = Swift.max(Double(dt.components.seconds) + Double(dt.components.attoseconds) * 1e-18, 0.001)
        let rate = Double(Swift.abs(detents)) / seconds
        let m = Swift.min(maxMultiplier, Swift.max(1, Int(rate / startRate)))
        return detents * m
    }
}

/// Timing and arithmetic of the controls interaction.
public struct ControlsConfiguration: Sendable, Hashable {
    /// Idle time after which active controls become inactive (docs/behaviour.md#controls-interaction).
    public var idleTimeout: Duration = .seconds(3)
    /// Idle time after the last slide that ends the adjusting state.
    public var adjustingTimeout: Duration = .seconds(1)
    /// Two light presses at most this far apart are a double press.
    var doublePressInterval: Duration = .milliseconds(400)
    /// Detents from one end of a continuous slider to the other.
    public var stepsPerRange: Int = 50
    /// How many controls the session holds at most.
    public var maxControlsCount: Int = 6
    /// Fast-spin acceleration; `nil` (the default) is off.
    public var acceleration: SliderAcceleration? = nil

    public init() {}
}

/// The controls interaction (docs/behaviour.md#controls-interaction) as a pure state machine:
/// controls, the current control, and the state, driven by `ControlsInput`s with the time
/// passed in. It never reads a clock: `nextDeadline` says when `advance(to:)` must be called
/// for the timeouts.
///
/// It changes values of its `Control`s; applying them to a camera and running actions is the
/// job of `ControlsSession`.
public struct ControlsCore: Sendable {
    /// Where the interaction is.
    public enum Phase: Sendable, Hashable {
        case inactive
        /// Showing the current control; `adjusting` after a slide until a short idle.
        case active(adjusting: Bool)
        /// Choosing a control; `highlighted` is the one a light press confirms.
        case selecting(highlighted: String)
    }

    public var configuration: ControlsConfiguration
    public private(set) var controls: [Control] = []
    public private(set) var phase: Phase = .inactive
    /// The name that was last used (from the state file, then from selections); kept even
    /// while no control of that name is present, so it wins once it is added.
    public private(set) var rememberedControl: String?
    private var pending: [Control]?
    // Read by the inlinable `nextDeadline`, which the camera module's controls session asks
    // for on every frame.
    @usableFromInline internal private(set) var lastActivity: Timestamp?
    @usableFromInline internal private(set) var lastSlide: Timestamp?
    private var lastPress: Timestamp?

    public init(configuration: ControlsConfiguration = .init(), rememberedControl: String? = nil) {
        self.configuration = configuration
        self.rememberedControl = rememberedControl
    }

    // MARK: Controls and configuration

    /// The control a slide moves: the remembered one if present, else the first.
    @inlinable public var currentControl: Control? {
        controls.first { $0.name == rememberedControl } ?? controls.first
    }

    @inlinable public func control(named name: String) -> Control? { controls.first { $0.name == name } }

    public var maxControlsCount: Int { configuration.maxControlsCount }

    /// Whether `control` could be added now (or to the configuration being built).
    public func canAddControl(_ control: Control) -> Bool { validate(control) == nil }

    private func validate(_ control: Control) -> ControlsConfigurationError? {
        let list = pending ?? controls
        if list.count >= configuration.maxControlsCount { return .full(max: configuration.maxControlsCount) }
        if list.contains(where: { $0.name == control.name }) { return .duplicateName(control.name) }
        if let kind = control.binding.systemKind, let camera = control.binding.camera?.identity,
            list.contains(where: { $0.binding.systemKind == kind && $0.binding.camera?.identity == camera })
        {
            return .duplicateSystemControl(kind: kind, camera: camera)
        }
        return nil
    }

    /// Starts a set of changes that `commitConfiguration` applies at once.
    public mutating func beginConfiguration() {
        if pending == nil { pending = controls }
    }

    /// Applies the changes since `beginConfiguration`.
    public mutating func commitConfiguration(at now: Timestamp) -> [ControlsEvent] {
        guard let next = pending else { return [] }
        pending = nil
        let before = controls.map(\.name)
        let shown = currentControl?.name
        controls = next
        var out: [ControlsEvent] = []
        if controls.map(\.name) != before { out.append(.controlsChanged(controls.map(\.name))) }
        out += fixUpAfterChange(previouslyShown: shown, at: now)
        return out
    }

    /// Adds a control (at once, or at commit inside a configuration).
    public mutating func addControl(_ control: Control, at now: Timestamp) throws(ControlsConfigurationError) -> [ControlsEvent] {
        if let error = validate(control) { throw error }
        return change(at: now) { $0.append(control) }
    }

    /// Removes the control named `name`.
    public mutating func removeControl(named name: String, at now: Timestamp) throws(ControlsConfigurationError) -> [ControlsEvent] {
        guard (pending ?? controls).contains(where: { $0.name == name }) else { throw .noSuchControl(name) }
        return change(at: now) { $0.removeAll { $0.name == name } }
    }

    /// Replaces a control's scale and value (a camera's range changed) without a report of a
    /// person's change.
    public mutating func updateControl(named name: String, at now: Timestamp, _ body: (inout Control) -> Void) -> [ControlsEvent] {
        change(at: now) { list in
            if let i = list.firstIndex(where: { $0.name == name }) { body(&list[i]) }
        }
    }

    /// Enables or disables a control. A disabled control stays listed but cannot be changed
    /// or selected.
    public mutating func setEnabled(_ enabled: Bool, named name: String, at now: Timestamp) -> [ControlsEvent] {
        updateControl(named: name, at: now) { $0.isEnabled = enabled }
    }

    private mutating func change(at now: Timestamp, _ body: (inout [Control]) -> Void) -> [ControlsEvent] {
        if pending != nil {
            body(&pending!)
            return []
        }
        beginConfiguration()
        body(&pending!)
        return commitConfiguration(at: now)
    }

    /// Keeps the state consistent after the control list changed.
    private mutating func fixUpAfterChange(previouslyShown: String?, at now: Timestamp) -> [ControlsEvent] {
        var out: [ControlsEvent] = []
        if controls.isEmpty {
            if phase != .inactive { deactivate(at: now, into: &out) }
            return out
        }
        if case .selecting(let h) = phase, control(named: h)?.isEnabled != true {
            if let first = controls.first(where: \.isEnabled) {
                phase = .selecting(highlighted: first.name)
                out.append(.state(.selectionMoved, control: first.name, time: now))
            } else {
                phase = .active(adjusting: false)
                out.append(.state(.selectionClosed, control: currentControl?.name, time: now))
            }
        }
        if phase != .inactive, let shown = currentControl?.name, shown != previouslyShown {
            out.append(.state(.becameActive, control: shown, time: now))
        }
        return out
    }

    // MARK: Interaction

    /// When `advance(to:)` must run next (adjusting idle or inactivity timeout), if ever.
    @inlinable public var nextDeadline: Timestamp? {
        guard let last = lastActivity else { return nil }
        switch phase {
        case .inactive: return nil
        case .active(adjusting: true):
            return Swift.min((lastSlide ?? last) + configuration.adjustingTimeout, last + configuration.idleTimeout)
        case .active, .selecting: return last + configuration.idleTimeout
        }
    }

    /// Handles the timeouts due at `now`.
    public mutating func advance(to now: Timestamp) -> [ControlsEvent] {
        var out: [ControlsEvent] = []
        advance(to: now, into: &out)
        return out
    }

    /// ``advance(to:)`` appending to `out`.
    public mutating func advance(to now: Timestamp, into out: inout [ControlsEvent]) {
        guard let last = lastActivity else { return }
        if case .active(adjusting: true) = phase, now >= (lastSlide ?? last) + configuration.adjustingTimeout {
            phase = .active(adjusting: false)
            out.append(.state(.willExitAdjusting, control: currentControl?.name, time: now))
        }
        if phase != .inactive, now >= last + configuration.idleTimeout {
            deactivate(at: now, into: &out)
        }
    }

    /// Handles a light press or a slide at `now`. Timeouts due before `now` are handled first.
    public mutating func handle(_ input: ControlsInput, at now: Timestamp) -> [ControlsEvent] {
        var out: [ControlsEvent] = []
        handle(input, at: now, into: &out)
        return out
    }

    /// ``handle(_:at:)`` appending to `out` (the hot path: no array of its own).
    public mutating func handle(_ input: ControlsInput, at now: Timestamp, into out: inout [ControlsEvent]) {
        advance(to: now, into: &out)
        guard let current = currentControl else { return }
        switch input {
        case .lightPress:
            let isDouble = lastPress.map { now - $0 <= configuration.doublePressInterval } ?? false
            lastPress = isDouble ? nil : now
            lastActivity = now
            switch phase {
            case .inactive:
                phase = .active(adjusting: false)
                out.append(.state(.becameActive, control: current.name, time: now))
            case .active(let adjusting):
                guard isDouble else { break }
                guard let first = current.isEnabled ? current : controls.first(where: \.isEnabled) else { break }
                if adjusting { out.append(.state(.willExitAdjusting, control: current.name, time: now)) }
                phase = .selecting(highlighted: first.name)
                out.append(.state(.selectionOpened, control: first.name, time: now))
            case .selecting(let highlighted):
                phase = .active(adjusting: false)
                if highlighted != rememberedControl {
                    rememberedControl = highlighted
                    out.append(.currentControl(highlighted))
                }
                out.append(.state(.selectionClosed, control: highlighted, time: now))
            }
        case .slide(let detents):
            guard detents != 0 else { return }
            let steps = configuration.acceleration?.steps(for: detents, sincePrevious: lastSlide.map { now - $0 }) ?? detents
            lastSlide = now
            lastActivity = now
            switch phase {
            case .inactive:
                // A slide that activates also moves the value: no detent is lost.
                phase = .active(adjusting: false)
                out.append(.state(.becameActive, control: current.name, time: now))
                adjust(current, by: steps, at: now, into: &out)
            case .active:
                adjust(current, by: steps, at: now, into: &out)
            case .selecting(let highlighted):
                moveHighlight(from: highlighted, by: detents, at: now, into: &out)
            }
        }
    }

    /// A value changed elsewhere (the app, another program using the camera): the control
    /// follows, so the next slide starts from it. Reported with origin `.external`.
    public mutating func controlValueChangedExternally(
        named name: String, to value: Double, raw: Int64? = nil, at now: Timestamp
    ) -> [ControlsEvent] {
        guard let i = controls.firstIndex(where: { $0.name == name }) else { return [] }
        let v = controls[i].scale.clamped(value)
        guard v != controls[i].value else { return [] }
        controls[i].value = v
        if pending != nil, let j = pending!.firstIndex(where: { $0.name == name }) { pending![j].value = v }
        return [.value(ControlValueChange(control: name, value: v, raw: raw, origin: .external, time: now))]
    }

    /// Sets a value without any report: the camera corrected what the core asked for.
    public mutating func correctValue(named name: String, to value: Double) {
        if let i = controls.firstIndex(where: { $0.name == name }) { controls[i].value = controls[i].scale.clamped(value) }
    }

    private mutating func adjust(_ control: Control, by steps: Int, at now: Timestamp, into out: inout [ControlsEvent]) {
        guard control.isEnabled, let i = controls.firstIndex(where: { $0.name == control.name }) else { return }
        // Any slide on an enabled control shows the full-screen slider, even one pinned at an end.
        if phase == .active(adjusting: false) {
            phase = .active(adjusting: true)
            out.append(.state(.willEnterAdjusting, control: control.name, time: now))
        }
        let v = control.scale.value(from: control.value, movedBy: steps, stepsPerRange: configuration.stepsPerRange)
        if v != control.value {
            controls[i].value = v
            out.append(.value(ControlValueChange(control: control.name, value: v, origin: .person, time: now)))
        }
        if rememberedControl != control.name {
            rememberedControl = control.name
            out.append(.currentControl(control.name))
        }
    }

    private mutating func moveHighlight(from name: String, by detents: Int, at now: Timestamp, into out: inout [ControlsEvent]) {
        guard var i = controls.firstIndex(where: { $0.name == name }) else { return }
        let direction = detents > 0 ? 1 : -1
        for _ in 0..<Swift.abs(detents) {
            // The next enabled control in the direction of travel; stay at the end.
            var j = i + direction
            while j >= 0, j < controls.count, !controls[j].isEnabled { j += direction }
            guard j >= 0, j < controls.count else { break }
            i = j
        }
        guard controls[i].name != name else { return }
        phase = .selecting(highlighted: controls[i].name)
        out.append(.state(.selectionMoved, control: controls[i].name, time: now))
    }

    private mutating func deactivate(at now: Timestamp, into out: inout [ControlsEvent]) {
        switch phase {
        case .inactive: return
        case .active(adjusting: true):
            out.append(.state(.willExitAdjusting, control: currentControl?.name, time: now))
        case .selecting:
            // A selection left open is cancelled: the current control stays.
            out.append(.state(.selectionClosed, control: currentControl?.name, time: now))
        case .active(adjusting: false):
            break
        }
        phase = .inactive
        lastPress = nil
        lastSlide = nil
        lastActivity = nil
        out.append(.state(.becameInactive, control: currentControl?.name, time: now))
    }
}
