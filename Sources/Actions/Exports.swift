// Types Actions once declared are the floor's now (docs/architecture.md#modules): importing Actions
// imports them, as it did when they were Actions's own.
@_exported import Vocabulary
