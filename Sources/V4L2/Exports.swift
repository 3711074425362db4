// The frame and format types V4L2 streams are the floor's (docs/architecture.md#modules):
// importing V4L2 imports them, as it did when they were V4L2's own.
@_exported import Vocabulary
