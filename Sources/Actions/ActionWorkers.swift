import Logging

extension ActionRunner {
    func runHooks(_ stream: AsyncStream<(ExecHook, ActionTrigger)>) async {
        let limit = max(1, configuration.maxConcurrentHooks)
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for await (hook, trigger) in stream {
                if running >= limit {
                    await group.next()
                    running -= 1
                }
                running += 1
                group.addTask { [self] in
                    switch await hook.run(for: trigger, logger: logger) {
                    case .success(let outcome):
                        onOutcome(.hookFinished(name: hook.name, outcome, press: trigger.press))
                    case .failure(let error):
                        logger.info("hook failed", metadata: ["hook.name": "\(hook.name)", "error": "\(error)"])
                        onOutcome(.failed(error, press: trigger.press))
                    }
                }
            }
        }
    }

    func playSound(_ trigger: ActionTrigger) {
        let file: String
        switch configuration.sound {
        case .off: return
        case .file(let path): file = path
        case .builtIn(let directory):
            do { file = try ShutterSound.file(in: directory) } catch {
                onOutcome(.failed(.recording(.file(error)), press: trigger.press))
                return
            }
        }
        // No player installed: skipped silently (a headless rig may have no audio at all).
        if configuration.soundPlayer.play(file, logger: logger) {
            onOutcome(.soundStarted(file: file, press: trigger.press))
        }
    }
}
