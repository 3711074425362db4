// The roles' plain data (`DeviceProfile`, `Role`, `RoleAssignment`, `DeviceKind`) is the floor's
// (docs/architecture.md#modules): importing Roles imports it, as it did when it was Roles's own.
@_exported import Vocabulary
