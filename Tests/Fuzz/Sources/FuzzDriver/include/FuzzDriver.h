#pragma once
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's entry for programs that have their own main (SwiftPM gives every executable
/// one): runs the fuzzer with argc/argv and the target callback.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
