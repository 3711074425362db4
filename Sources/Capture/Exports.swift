// Roles sit below the core and every user of the core speaks of them: importing Capture
// imports Roles.
@_exported import Roles
// The core's events and what they carry (`PipelineEvent`, `Control`, `ControlValueChange`, ...)
// are the floor's (docs/architecture.md#modules): importing Capture imports them, as it did
// when they were Capture's own.
@_exported import Vocabulary
