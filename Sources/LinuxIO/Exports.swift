// The one error shape, `SystemError`, is the floor's (docs/architecture.md#modules): importing
// LinuxIO imports it, as it did when it was LinuxIO's own.
@_exported import Vocabulary
