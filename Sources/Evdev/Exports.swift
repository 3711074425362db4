// The types Evdev reads into are the floor's (docs/architecture.md#modules): importing Evdev
// imports them, as it did when they were Evdev's own.
@_exported import Vocabulary
