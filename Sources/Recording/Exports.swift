// What a recording wrote and why it failed (`PhotoResult`, `VideoResult`, `RecoveredVideo`,
// `VideoFormat`, `RecordingError`, `JPEGError`) are the floor's (docs/architecture.md#modules):
// importing Recording imports them, as it did when they were Recording's own.
@_exported import Vocabulary
