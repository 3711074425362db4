// libcamera (a C++ library) for the one target that uses it, CLibcameraBridge: this module
// exists for pkg-config's flags and the link; only the version macros are plain C.
#include <libcamera/version.h>
