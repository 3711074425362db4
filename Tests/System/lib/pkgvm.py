#!/usr/bin/env python3
"""Host side of evcapture's package tests (started by Tests/System/package-tests).

Builds the Debian package twice (two versions, for the upgrade test) with
packaging/deb/build, prepares the cache (the kernel and a small first-stage initramfs as
for the system tests, plus a Debian root file system made with mmdebstrap), boots that
real Debian system under QEMU/TCG with systemd as PID 1 and runs
Tests/System/debian/package-tests.sh in it as root. That script installs the package with
dpkg and reports one line per test; this prints them and the counts.
See Tests/System/README.md, "Package tests".
"""
import argparse
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

from harness import (EXIT_CRASHED, EXIT_FAILED, EXIT_NOTHING_RAN, EXIT_OK, EXIT_SETUP, EXIT_TIMEOUT,
                     QBOOT, REPO, SYSTEM_DIR, Initramfs, Kernel, SetupError, atomic_write, boot,
                     build_fakeuvc, interrupt, read_status, say)
from debianroot import DEBIAN_DIR, SUITES, DebianRoot, host_suite

T_START = time.monotonic()


# Debian's version suffix of a package built for another release than the host's, as
# packaging/deb/build names them (VERSION-1+deb13)
RELEASE_SUFFIX = {"bookworm": "+deb12", "trixie": "+deb13"}
RELEASE_NAME = {"bookworm": "Debian 12", "trixie": "Debian 13"}


class Release:
    """Which Debian the guest runs and the package is built for. The host's release keeps the
    plain names (evcapture_VERSION-1_amd64.deb, .build-systest/pkg-result.json); another
    release (--release trixie on a Debian 12 host) has its own suffix, files and lock, so that
    both can be prepared at once."""

    def __init__(self, suite):
        self.suite = suite
        self.native = suite == host_suite()
        self.suffix = "" if self.native else RELEASE_SUFFIX[suite]
        self.tag = "" if self.native else f"-{suite}"  # in the names of its files
        self.build_args = [] if self.native else ["--release", suite]
        self.label = f"{RELEASE_NAME.get(suite, suite)} ({suite})"


def build_packages(out, version, skip_build, release):
    """Two builds of the same binary: VERSION-1 and VERSION-2 (the upgrade), with the release's
    suffix (VERSION-1+deb13)."""
    debs = {}
    for revision in ("1", "2"):
        full = f"{version}-{revision}{release.suffix}"
        path = os.path.join(out, f"evcapture_{full}_amd64.deb")
        if not (skip_build and os.path.exists(path)):
            say(f"packaging/deb/build {' '.join(release.build_args + ['--version', full])}")
            argv = [os.path.join(REPO, "packaging", "deb", "build"), *release.build_args, "--version", full, "--out", out]
            if revision == "2":
                argv.append("--no-lintian")  # the same files as -1, checked there
            result = subprocess.run(argv, cwd=REPO)
            if result.returncode != 0:
                raise SetupError(f"packaging/deb/build --version {full} failed (status {result.returncode})")
        debs[revision] = path
    return debs


def qemu_command(args, kernel, initramfs, rootfs, out_dir):
    cmdline = ["console=ttyS0", "panic=-1", "no_timer_check", "acpi=noirq", "rdinit=/init",
               "systemd.show_status=0", "systemd.log_level=warning",
               "systemd.journald.forward_to_console=0", "loglevel=3" if not args.verbose else "loglevel=6"]
    if not args.verbose:
        cmdline.append("quiet")
    qemu = [os.environ.get("EVCAPTURE_SYSTEST_QEMU", "qemu-system-x86_64"),
            "-accel", "tcg", "-m", str(args.memory), "-smp", str(args.cpus),
            "-nodefaults", "-no-user-config", "-no-reboot", "-display", "none", "-serial", "stdio",
            "-kernel", kernel["vmlinux"], "-initrd", initramfs, "-append", " ".join(cmdline),
            # snapshot=on: the guest's writes go to a temporary file; the cached image stays pristine
            "-drive", f"file={rootfs},format=raw,if=virtio,snapshot=on,cache=unsafe",
            "-virtfs", "local,path=/,mount_tag=evchost,security_model=none,readonly=on,multidevs=remap",
            "-virtfs", f"local,path={out_dir.replace(',', ',,')},mount_tag=evcout,security_model=none,multidevs=remap"]
    if os.path.exists(QBOOT):
        qemu += ["-bios", QBOOT]
    return qemu


def count(results_path):
    """(passed, failed, names of failed) from the guest's results.jsonl."""
    passed, failed = 0, []
    try:
        with open(results_path) as f:
            for line in f:
                r = json.loads(line)
                if r["status"] == "passed":
                    passed += 1
                else:
                    failed.append(r["name"])
    except (OSError, ValueError):
        return None
    return passed, failed


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="Tests/System/package-tests",
        description="Build the Debian package, install it with dpkg in a real Debian system "
                    "(systemd as PID 1, udevd) under QEMU, and test the service there.")

    p.add_argument("--release", choices=SUITES, default=None,
                   help="the Debian release of the guest and the package (default: the host's; "
                        "trixie: Debian 13's package, packaging/deb/build --release trixie, in a Debian 13 guest)")
    p.add_argument("--no-build", action="store_true",
                   help="reuse the packages in .build-systest/debs (debs-RELEASE) if they are there")
    p.add_argument("--offline", action="store_true", help="never ask apt; use the cached kernel and root")
    p.add_argument("--timeout", type=float, default=float(os.environ.get("EVCAPTURE_PKGTEST_TIMEOUT", 1200)),
                   metavar="SEC", help="stop the guest after SEC seconds (default 1200)")
    p.add_argument("--memory", type=int, default=1024, metavar="MIB", help="guest memory (default 1024)")
    p.add_argument("--cpus", type=int, default=1, metavar="N", help="guest CPUs (default 1)")
    p.add_argument("--prepare-only", action="store_true", help="fill the cache and build, do not boot")
    p.add_argument("-q", "--quiet", action="store_true", help="print only the test lines (console still logged)")
    p.add_argument("-v", "--verbose", action="store_true", help="kernel messages")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGHUP, interrupt)
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                         "evcapture-systest")
    os.makedirs(cache, exist_ok=True)
    build_dir = os.path.join(REPO, ".build-systest")
    os.makedirs(build_dir, exist_ok=True)
    try:
        release = Release(args.release or host_suite())
    except SetupError as e:
        say(f"error: {e}")
        return EXIT_SETUP
    tag = release.tag
    lock = open(os.path.join(build_dir, f"pkg{tag}-lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        with open(os.path.join(cache, "lock"), "w") as cache_lock:
            fcntl.flock(cache_lock, fcntl.LOCK_EX)
            kernel = Kernel(cache, args.offline).prepare()
            initramfs = Initramfs(cache, kernel, guest_dir=DEBIAN_DIR).prepare()
            # (under the lock too: two releases' runs may prepare at once)
            fakeuvc = build_fakeuvc(build_dir)
        # The same kernel (Debian 12's, the harness's) for every release: its modules come in
        # the initramfs, and Debian 13's systemd runs on it (docs/testing.md#debian-13)
        rootfs = DebianRoot(cache, args.offline, suite=release.suite).prepare()
        debs_dir = os.path.join(build_dir, f"debs{tag}")
        stamp = subprocess.run(["git", "log", "-1", "--format=%cd", "--date=format:%Y%m%d%H%M%S"],
                               cwd=REPO, stdout=subprocess.PIPE, text=True).stdout.strip() or "0"
        version = f"0.1.0+git{stamp}"
        last = "-1" + release.suffix
        found = sorted(n for n in os.listdir(debs_dir) if n.startswith("evcapture_") and n.endswith(f"{last}_amd64.deb")) \
            if os.path.isdir(debs_dir) else []
        if args.no_build and found:
            version = found[-1].split("_")[1][:-len(last)]
        else:
            shutil.rmtree(debs_dir, ignore_errors=True)
        os.makedirs(debs_dir, exist_ok=True)
        debs = build_packages(debs_dir, version, args.no_build, release)
    except SetupError as e:
        say(f"error: {e}")
        return EXIT_SETUP
    t_prepared = time.monotonic()
    say(f"ready: {release.label}: kernel {kernel['abi']}, {os.path.basename(rootfs)}, "
        f"{os.path.basename(debs['1'])}, prepared in {t_prepared - T_START:.1f}s")
    if args.prepare_only:
        return EXIT_OK

    out_dir = os.path.join(build_dir, f"pkg{tag}-out")
    result_path = os.path.join(build_dir, f"pkg{tag}-result.json")
    console_path = os.path.join(build_dir, f"pkg{tag}-console.log")
    if os.path.exists(result_path):
        os.unlink(result_path)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    shutil.copyfile(os.path.join(DEBIAN_DIR, "package-tests.sh"), os.path.join(out_dir, "tests.sh"))
    q = shlex.quote
    plan = {"EVC_OUT_HOST": out_dir, "EVC_REPO": REPO, "EVC_FAKEUVC": fakeuvc,
            "EVC_DEB1": debs["1"], "EVC_DEB2": debs["2"]}
    with open(os.path.join(out_dir, "plan.env"), "w") as f:
        f.write("".join(f"export {k}={q(v)}\n" for k, v in plan.items()))
    qemu = qemu_command(args, kernel, initramfs, rootfs, out_dir)
    if args.verbose:
        say("qemu: " + " ".join(q(a) for a in qemu))
    try:
        outcome, seconds, console = boot(args, qemu, console_path, os.path.join(out_dir, "status"))
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    statuses = read_status(os.path.join(out_dir, "status"))
    counts = count(os.path.join(out_dir, "results.jsonl"))
    ready = re.search(r"evc-guest: ready after ([0-9.]+)s", console)

    status, problems = EXIT_OK, []
    if outcome == "timeout":
        status = EXIT_TIMEOUT
        problems.append(f"timeout: the guest was still running after {args.timeout:g}s (killed)")
    elif outcome != "done":
        status = EXIT_CRASHED
        problems.append("the guest stopped without finishing")
    if statuses.get(1) not in (0, None) and status == EXIT_OK:
        status = EXIT_FAILED
    if counts is None:
        status = status or EXIT_NOTHING_RAN
        problems.append("the guest wrote no results")
    else:
        passed, failed = counts
        if failed:
            status = status or EXIT_FAILED
            problems += [f"test failed: {name}" for name in failed]
        if passed + len(failed) == 0:
            status = status or EXIT_NOTHING_RAN
            problems.append("no package test ran")
    print("", flush=True)
    for problem in problems:
        say(f"FAILED: {problem}")
    if counts is not None:
        say(f"package tests ({release.label}): {counts[0]} passed, {len(counts[1])} failed")
    timing = f"total {time.monotonic() - T_START:.1f}s (prepare {t_prepared - T_START:.1f}s, guest {seconds:.1f}s"
    if ready:
        timing += f", of it boot {float(ready.group(1)):.1f}s"
    say(timing + ")")
    result = {"status": status, "problems": problems, "seconds": round(time.monotonic() - T_START, 1),
              "release": release.suite, "prepare_seconds": round(t_prepared - T_START, 1),
              "guest_seconds": round(seconds, 1)}
    if counts is not None:
        result.update(passed=counts[0], failed=len(counts[1]), skipped=0)
    atomic_write(result_path, json.dumps(result, indent=1).encode())
    say(f"console log: {os.path.relpath(console_path)}; "
        f"result: {'PASS' if status == EXIT_OK else f'FAIL (exit status {status})'}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
