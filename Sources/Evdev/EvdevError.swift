import Vocabulary

/// An error from the evdev layer ("opening /dev/input/event3: permission denied"): the one
/// error shape, ``SystemError`` (docs/architecture.md#errors-and-habits), under this layer's
/// name. Its codes are the shared ones: `.permissionDenied` (udev rules or group membership),
/// `.notFound`/`.deviceRemoved` (``SystemError/isDeviceGone``), `.busy` (another program
/// holds the grab), `.failed`.
public typealias EvdevError = SystemError
