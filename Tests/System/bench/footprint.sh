#!/bin/sh
# Guest side of the footprint comparison (BENCHMARKS.md, "memory" and "start"), e.g. from the repository root:
#   Tests/System/bench/build
#   Tests/System/run --no-build --no-bundle --shell-script Tests/System/bench/footprint.sh \
#     -e EVC_FP_EXES="/path/a/evcapture /path/b/evcapture" -e EVC_BENCH_DIR_SRC=$PWD/Tests/System/bench \
#     -e EVC_FP_FLOOD=$PWD/.build-systest/bench/uinput-flood
mount -t debugfs none /sys/kernel/debug 2>/dev/null || echo "footprint: no debugfs (fault-around stays 64 kB)"
exec python3 "$EVC_BENCH_DIR_SRC/footprint.py"
