#!/usr/bin/env python3
"""Host side of evcapture's system-test harness (started by Tests/System/run).

Prepares a cache (Debian kernel, guest initramfs), builds the fake camera and the
test bundle, boots the guest under QEMU/TCG, runs the system tests inside it and
reports what Swift Testing counted. See Tests/System/README.md.
"""
import argparse
import copy
import fcntl
import hashlib
import json
import lzma
import os
import re
import select
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

from guests import plan_guests, record_suite_seconds
from testcounts import count_results, failures

SYSTEM_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # Tests/System
REPO = os.path.dirname(os.path.dirname(SYSTEM_DIR))
GUEST_DIR = os.path.join(SYSTEM_DIR, "guest")
FAKEUVC_SOURCE = os.path.join(SYSTEM_DIR, "fakeuvc", "fakeuvc.c")
QBOOT = "/usr/share/qemu/qboot.rom"
KEEP_INITRAMFS = 6  # several worktrees (and the package tests' boot stage) share one cache

# Exit statuses (documented in README.md).
EXIT_OK, EXIT_FAILED, EXIT_SETUP, EXIT_NOTHING_RAN = 0, 1, 2, 3
EXIT_TIMEOUT, EXIT_CRASHED = 124, 125

T_START = time.monotonic()


def say(message):
    print(f"systest: {message}", file=sys.stderr, flush=True)


class SetupError(Exception):
    """A problem preparing the lab (not a test failure)."""


def run(argv, **kwargs):
    """Runs a host command; a failure becomes a SetupError that shows its output."""
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kwargs)
    if result.returncode != 0:
        output = result.stdout.decode(errors="replace").strip()
        raise SetupError(f"{' '.join(shlex.quote(a) for a in argv)} failed (status {result.returncode})"
                         + (f":\n{output}" if output else ""))
    return result.stdout.decode(errors="replace")


def as_root(argv):
    return argv if os.geteuid() == 0 else ["sudo", "--"] + argv


def file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def atomic_write(path, data):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------- kernel

class Kernel:
    """The Debian kernel package linux-image-amd64 currently depends on, unpacked in the cache."""

    def __init__(self, cache, offline):
        self.cache = cache
        self.offline = offline
        self.state_path = os.path.join(cache, "kernel.json")

    def _state(self):
        try:
            with open(self.state_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    @staticmethod
    def _lists_stamp():
        # apt's package lists change only with `apt-get update`; while they stay the same,
        # the kernel chosen last time is still the current one and apt is not asked
        try:
            return str(os.stat("/var/lib/apt/lists").st_mtime_ns)
        except OSError:
            return "none"

    @staticmethod
    def _candidate():
        """(package, version) that the candidate linux-image-amd64 depends on, or None."""
        out = subprocess.run(["apt-cache", "show", "--no-all-versions", "linux-image-amd64"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode()
        m = re.search(r"^Depends:.*?\b(linux-image-[0-9][^\s,]*-amd64) \(= ([^)]+)\)", out, re.M)
        return (m.group(1), m.group(2)) if m else None

    def _usable(self, state):
        return bool(state) and os.path.isfile(state.get("vmlinux", "")) and os.path.isdir(state.get("modroot", ""))

    def prepare(self):
        state = self._state()
        if self.offline:
            if not self._usable(state):
                raise SetupError(f"--offline: no kernel in {self.cache} yet (run once without --offline)")
            return state
        stamp = self._lists_stamp()
        if self._usable(state) and state.get("lists_stamp") == stamp:
            return state
        wanted = self._candidate()
        if wanted is None:
            say("apt knows no linux-image-amd64: running apt-get update")
            run(as_root(["apt-get", "update", "-qq"]))
            stamp = self._lists_stamp()
            wanted = self._candidate()
            if wanted is None:
                raise SetupError("apt-cache knows no linux-image-amd64 package (check the apt sources)")
        package, version = wanted
        if self._usable(state) and (state["package"], state["version"]) == (package, version):
            state["lists_stamp"] = stamp
            atomic_write(self.state_path, json.dumps(state, indent=1).encode())
            return state
        try:
            deb = self._download(package, version)
        except SetupError:
            if self._usable(state):
                say(f"could not download {package} {version}; keeping the cached {state['package']}")
                return state
            say("download failed; running apt-get update and trying again")
            run(as_root(["apt-get", "update", "-qq"]))
            stamp = self._lists_stamp()
            package, version = self._candidate() or wanted
            deb = self._download(package, version)
        state = self._unpack(package, version, deb)
        state["lists_stamp"] = stamp
        atomic_write(self.state_path, json.dumps(state, indent=1).encode())
        self._prune(state)
        return state

    def _download(self, package, version):
        debs = os.path.join(self.cache, "debs")
        os.makedirs(debs, exist_ok=True)
        say(f"downloading {package} {version} (apt-get download)")
        before = set(os.listdir(debs))
        run(["apt-get", "download", "-q", f"{package}={version}"], cwd=debs)
        new = [n for n in os.listdir(debs) if n.startswith(package + "_") and n.endswith(".deb")]
        fresh = [n for n in new if n not in before] or new
        if not fresh:
            raise SetupError(f"apt-get download left no {package} package in {debs}")
        return os.path.join(debs, sorted(fresh)[-1])

    def _unpack(self, package, version, deb):
        abi = package[len("linux-image-"):]
        target = os.path.join(self.cache, "kernel", abi)
        tmp = target + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        say(f"unpacking {os.path.basename(deb)}")
        modroot = os.path.join(tmp, "root")
        run(["dpkg-deb", "-x", deb, modroot])
        run(["depmod", "-b", modroot, abi])
        extract_vmlinux(os.path.join(modroot, "boot", f"vmlinuz-{abi}"), os.path.join(tmp, "vmlinux"))
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
        return {"package": package, "version": version, "abi": abi, "deb": deb,
                "vmlinux": os.path.join(target, "vmlinux"), "modroot": os.path.join(target, "root")}

    def _prune(self, state):
        kernels = os.path.join(self.cache, "kernel")
        for name in os.listdir(kernels):
            if name != state["abi"]:
                shutil.rmtree(os.path.join(kernels, name), ignore_errors=True)
        debs = os.path.join(self.cache, "debs")
        for name in os.listdir(debs):
            if os.path.join(debs, name) != state["deb"]:
                os.unlink(os.path.join(debs, name))


def extract_vmlinux(bzimage, out):
    """Writes the ELF kernel inside a bzImage. QEMU boots that ELF through its PVH entry,
    which saves the in-guest decompression (several seconds under TCG)."""
    with open(bzimage, "rb") as f:
        image = f.read()
    # x86 boot protocol: setup sectors at 0x1f1, payload offset/length (>= 2.08) at 0x248/0x24c
    setup_sectors = image[0x1F1] or 4
    payload_offset = int.from_bytes(image[0x248:0x24C], "little")
    payload_length = int.from_bytes(image[0x24C:0x250], "little")
    start = (setup_sectors + 1) * 512 + payload_offset
    payload = image[start:start + payload_length]
    if not payload.startswith(b"\xfd7zXZ\x00"):
        raise SetupError(f"{bzimage}: the kernel payload is not XZ-compressed (cannot extract an ELF)")
    elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(payload)
    if not elf.startswith(b"\x7fELF"):
        raise SetupError(f"{bzimage}: the decompressed payload is not an ELF file")
    atomic_write(out, elf)


# ------------------------------------------------------------------------------ vimc

class Vimc:
    """vimc, the kernel's virtual media-controller camera (drivers/media/test-drivers/vimc),
    built out of tree for exactly the kernel the guest boots: Debian's kernel package does not
    ship it (CONFIG_VIDEO_VIMC is not set), and libcamera's vimc pipeline handler is the only
    libcamera camera that streams in the VM. The source is Debian's linux-source-<major.minor>
    and the build uses linux-headers-<abi>, both at the kernel's own package version; the
    stripped module is kept in .build-systest/vimc/ and rebuilt only when the kernel changes."""

    def __init__(self, build_dir, kernel, offline):
        self.dir = os.path.join(build_dir, "vimc")
        self.kernel = kernel
        self.offline = offline
        self.module = os.path.join(self.dir, "vimc.ko")
        self.stamp = os.path.join(self.dir, "vimc.json")

    def _wanted(self):
        abi, version = self.kernel["abi"], self.kernel["version"]
        series = ".".join(version.split(".")[:2])  # 6.1.192-2 -> 6.1
        return {"abi": abi, "version": version,
                "packages": [f"linux-headers-{abi}", f"linux-source-{series}"],
                "headers": f"/usr/src/linux-headers-{abi}",
                "source": f"/usr/src/linux-source-{series}.tar.xz", "tree": f"linux-source-{series}"}

    def prepare(self):
        wanted = self._wanted()
        try:
            with open(self.stamp) as f:
                built = json.load(f)
        except (OSError, ValueError):
            built = {}
        if os.path.isfile(self.module) and {k: built.get(k) for k in ("abi", "version")} == \
                {"abi": wanted["abi"], "version": wanted["version"]}:
            return self.module
        self._install(wanted)
        started = time.monotonic()
        work = os.path.join(self.dir, "src")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        subdir = "drivers/media/test-drivers/vimc"
        say(f"building vimc for {wanted['abi']} from {os.path.basename(wanted['source'])}")
        run(["tar", "-xJf", wanted["source"], "-C", work, f"{wanted['tree']}/{subdir}"])
        src = os.path.join(work, wanted["tree"], subdir)
        run(["make", "-C", wanted["headers"], f"M={src}", "CONFIG_VIDEO_VIMC=m",
             f"-j{os.cpu_count() or 1}", "modules"])
        built_ko = os.path.join(src, "vimc.ko")
        magic = run(["modinfo", "-F", "vermagic", built_ko]).split()
        if not magic or magic[0] != wanted["abi"]:
            raise SetupError(f"{built_ko}: built for {magic[:1]}, not {wanted['abi']}")
        run(["strip", "--strip-debug", "-o", self.module + ".tmp", built_ko])
        os.replace(self.module + ".tmp", self.module)
        seconds = time.monotonic() - started
        shutil.rmtree(work, ignore_errors=True)
        atomic_write(self.stamp, json.dumps({"abi": wanted["abi"], "version": wanted["version"],
                                             "seconds": round(seconds, 1)}, indent=1).encode())
        say(f"built {os.path.relpath(self.module, REPO)} in {seconds:.1f}s")
        return self.module

    def _install(self, wanted):
        """linux-headers-<abi> and linux-source-<series> at the kernel's version."""
        install_kernel_packages(wanted["packages"], wanted["version"], self.offline, "vimc")


def install_kernel_packages(packages, version, offline, what):
    """Installs `packages` at the kernel package's `version` (headers, sources) when they are
    not installed at it; `what` names the module that needs them in messages."""
    missing = []
    for package in packages:
        have = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Status} ${Version}", package],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode().split()
        if have != ["installed", version]:
            missing.append(f"{package}={version}")
    if not missing:
        return
    if offline:
        raise SetupError(f"--offline: {what} needs {' '.join(missing)} (run once without --offline)")
    say(f"installing {' '.join(missing)} (to build {what} for the guest's kernel)")
    if os.geteuid() != 0 and not shutil.which("sudo"):
        raise SetupError(f"{what} needs {' '.join(missing)} (need root or sudo to install them)")
    argv = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-qq",
            "--no-install-recommends"] + missing
    try:
        run(as_root(argv))
    except SetupError:
        run(as_root(["apt-get", "update", "-qq"]))
        run(as_root(argv))


# ------------------------------------------------------------------------ v4l2loopback

class V4L2Loopback:
    """v4l2loopback, a V4L2 device whose frames a writer process sends (Debian ships it as
    the DKMS source package v4l2loopback-dkms): the one camera in the VM that delivers H.264
    (the ffmpeg CLI encodes into it). The package is only downloaded (apt-get download, never
    installed: DKMS would build it for the host's kernel) and unpacked here; the module is
    built out of tree against linux-headers-<abi> at the guest kernel's version, kept in
    .build-systest/v4l2loopback/ and rebuilt only when the kernel or the package changes. It
    is not in the initramfs: the tests that want it insmod it ($EVCAPTURE_V4L2LOOPBACK_MODULE)
    and rmmod it, so the other suites see no extra video node."""

    PACKAGE = "v4l2loopback-dkms"

    def __init__(self, build_dir, kernel, offline):
        self.dir = os.path.join(build_dir, "v4l2loopback")
        self.kernel = kernel
        self.offline = offline
        self.module = os.path.join(self.dir, "v4l2loopback.ko")
        self.stamp = os.path.join(self.dir, "v4l2loopback.json")

    def _candidate(self):
        out = subprocess.run(["apt-cache", "show", "--no-all-versions", self.PACKAGE],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode()
        m = re.search(r"^Version: (\S+)", out, re.M)
        return m.group(1) if m else None

    def prepare(self):
        abi, version = self.kernel["abi"], self.kernel["version"]
        try:
            with open(self.stamp) as f:
                built = json.load(f)
        except (OSError, ValueError):
            built = {}
        fresh = os.path.isfile(self.module) and built.get("abi") == abi and built.get("kernel_version") == version
        if fresh and self.offline:
            return self.module
        if self.offline:
            raise SetupError(f"--offline: v4l2loopback not built for {abi} yet (run once without --offline)")
        package_version = self._candidate()  # apt's lists only: no network
        if fresh and built.get("package_version") in (package_version, None):
            return self.module
        if package_version is None:
            raise SetupError(f"apt knows no {self.PACKAGE} package (check the apt sources)")
        headers = f"/usr/src/linux-headers-{abi}"
        install_kernel_packages([f"linux-headers-{abi}"], version, self.offline, "v4l2loopback")
        started = time.monotonic()
        os.makedirs(self.dir, exist_ok=True)
        work = os.path.join(self.dir, "src")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        say(f"building v4l2loopback {package_version} for {abi}")
        run(["apt-get", "download", "-q", f"{self.PACKAGE}={package_version}"], cwd=work)
        debs = [n for n in os.listdir(work) if n.startswith(self.PACKAGE + "_") and n.endswith(".deb")]
        if not debs:
            raise SetupError(f"apt-get download left no {self.PACKAGE} package in {work}")
        root = os.path.join(work, "root")
        run(["dpkg-deb", "-x", os.path.join(work, debs[0]), root])
        sources = [n for n in os.listdir(os.path.join(root, "usr", "src")) if n.startswith("v4l2loopback-")]
        if len(sources) != 1:
            raise SetupError(f"{debs[0]}: expected one usr/src/v4l2loopback-*, found {sources}")
        src = os.path.join(root, "usr", "src", sources[0])
        run(["make", "-C", headers, f"M={src}", f"-j{os.cpu_count() or 1}", "modules"])
        built_ko = os.path.join(src, "v4l2loopback.ko")
        magic = run(["modinfo", "-F", "vermagic", built_ko]).split()
        if not magic or magic[0] != abi:
            raise SetupError(f"{built_ko}: built for {magic[:1]}, not {abi}")
        run(["strip", "--strip-debug", "-o", self.module + ".tmp", built_ko])
        os.replace(self.module + ".tmp", self.module)
        seconds = time.monotonic() - started
        shutil.rmtree(work, ignore_errors=True)
        atomic_write(self.stamp, json.dumps({"abi": abi, "kernel_version": version, "package_version": package_version,
                                             "seconds": round(seconds, 1)}, indent=1).encode())
        say(f"built {os.path.relpath(self.module, REPO)} in {seconds:.1f}s")
        return self.module


# ------------------------------------------------------------------------- initramfs

def cpio_archive(entries):
    """An uncompressed newc archive. entries: (path, mode, bytes or None, link target or None)."""
    out = bytearray()
    for ino, (path, mode, data, link) in enumerate(entries + [("TRAILER!!!", 0, b"", None)], start=1):
        body = link.encode() if link is not None else (data or b"")
        name = path.encode() + b"\0"
        header = "070701" + "".join(f"{v:08X}" for v in (
            ino, mode, 0, 0, 1, 0, len(body), 0, 0, 0, 0, len(name), 0))
        out += header.encode() + name
        out += b"\0" * (-len(out) % 4)
        out += body
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


class Initramfs:
    """busybox, the kernel modules the tests need, systemd-udevd with the host's rules,
    and the harness's guest files (Tests/System/guest; the package tests' boot stage uses
    Tests/System/debian: its init, bin/ and modules.txt)."""

    def __init__(self, cache, kernel, guest_dir=GUEST_DIR, extra_modules=()):
        self.cache = cache
        self.kernel = kernel
        self.guest_dir = guest_dir
        self.extra_modules = list(extra_modules)  # .ko files built here (vimc), into extra/
        self.abi = kernel["abi"]
        self.modroot = kernel["modroot"]

    def modules(self):
        names = []
        with open(os.path.join(self.guest_dir, "modules.txt")) as f:
            for line in f:
                word = line.split("#", 1)[0].strip()
                if word:
                    names.append(word)
        names += os.environ.get("EVCAPTURE_SYSTEST_MODULES", "").split()
        return names

    def host_programs(self):
        programs = [shutil.which("busybox") or "/bin/busybox", "/lib/systemd/systemd-udevd", "/usr/bin/udevadm"]
        udev_lib = "/lib/udev"
        for name in sorted(os.listdir(udev_lib)):
            path = os.path.join(udev_lib, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                programs.append(path)  # helpers the rules call (v4l_id, ...)
        return programs

    @staticmethod
    def shared_libraries(program):
        out = subprocess.run(["ldd", program], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode()
        return re.findall(r"(/\S+) \(0x", out)

    def host_files(self):
        """Host files copied into the image (besides modules), for the fingerprint and the copy."""
        files = set()
        for program in self.host_programs():
            if not os.path.exists(program):
                raise SetupError(f"missing host program {program} (is the udev package installed?)")
            files.add(program)
            files.update(self.shared_libraries(program))
        for rules in ("/lib/udev/rules.d", "/etc/udev/rules.d"):
            if os.path.isdir(rules):
                files.update(os.path.join(rules, n) for n in os.listdir(rules))
        for extra in ("/lib/udev/hwdb.bin", "/etc/passwd", "/etc/group"):
            if os.path.exists(extra):
                files.add(extra)
        return sorted(f for f in files if os.path.isfile(f))

    def fingerprint(self):
        h = hashlib.sha256()
        h.update(f"{self.kernel['package']} {self.kernel['version']}\n".encode())
        h.update(" ".join(self.modules()).encode())
        for path in self.extra_modules:
            h.update(f"extra {os.path.basename(path)} {file_digest(path)}\n".encode())
        for root, _, names in sorted(os.walk(self.guest_dir)):
            for name in sorted(names):
                path = os.path.join(root, name)
                h.update(f"{os.path.relpath(path, self.guest_dir)} {file_digest(path)}\n".encode())
        for path in self.host_files():
            st = os.stat(path)
            h.update(f"{path} {st.st_size} {st.st_mtime_ns}\n".encode())
        return h.hexdigest()[:16]

    def prepare(self):
        path = os.path.join(self.cache, f"initramfs-{self.abi}-{self.fingerprint()}.cpio")
        if not os.path.exists(path):
            started = time.monotonic()
            atomic_write(path, self.build())
            say(f"built {os.path.basename(path)} ({os.path.getsize(path) >> 20} MiB) "
                f"in {time.monotonic() - started:.1f}s")
        os.utime(path)
        images = sorted((p for p in os.listdir(self.cache) if p.startswith("initramfs-") and p.endswith(".cpio")),
                        key=lambda p: os.stat(os.path.join(self.cache, p)).st_mtime, reverse=True)
        for old in images[KEEP_INITRAMFS:]:
            os.unlink(os.path.join(self.cache, old))
        return path

    def build(self):
        tree = {}  # path in the image -> (mode, data or None, link or None)

        def directory(path):
            parts = path.strip("/").split("/")
            for i in range(1, len(parts) + 1):
                tree.setdefault("/".join(parts[:i]), (stat.S_IFDIR | 0o755, None, None))

        def symlink(path, target):
            directory(os.path.dirname(path))
            tree[path.strip("/")] = (stat.S_IFLNK | 0o777, None, target)

        def copy(host_path, image_path=None, mode=None):
            # the image uses merged /usr like Debian 12: place files at their real directory
            image_path = image_path or os.path.join(os.path.realpath(os.path.dirname(host_path)),
                                                    os.path.basename(host_path))
            directory(os.path.dirname(image_path))
            with open(host_path, "rb") as f:
                data = f.read()
            tree[image_path.strip("/")] = (stat.S_IFREG | (mode or (os.stat(host_path).st_mode & 0o7777)), data, None)

        for d in ("usr/bin", "usr/sbin", "usr/lib", "usr/lib64", "usr/local/bin", "etc/udev/rules.d",
                  "proc", "sys", "dev", "run", "tmp", "root", "host", "out", "mnt"):
            directory(d)
        for link in ("bin", "sbin", "lib", "lib64"):
            symlink(link, f"usr/{link}")

        busybox = shutil.which("busybox") or "/bin/busybox"
        for f in self.host_files():
            copy(f)
        real_busybox = os.path.join(os.path.realpath(os.path.dirname(busybox)), os.path.basename(busybox))
        applets = subprocess.run([busybox, "--list-full"], stdout=subprocess.PIPE).stdout.decode().split()
        for applet in applets:
            target = os.path.join(os.path.realpath("/" + os.path.dirname(applet)).lstrip("/"),
                                  os.path.basename(applet))
            if target.strip("/") not in tree:
                symlink(target, real_busybox)

        # kernel modules and what they depend on, resolved by the host's kmod
        mod_base = os.path.join(self.modroot, "lib", "modules", self.abi)
        needed = self.modules()
        for path in self.extra_modules:
            copy(path, f"usr/lib/modules/{self.abi}/extra/{os.path.basename(path)}", 0o644)
            depends = run(["modinfo", "-F", "depends", path]).strip()
            needed += [d for d in depends.split(",") if d]
        for name in needed:
            result = subprocess.run(["modprobe", "-d", self.modroot, "-S", self.abi, "--show-depends", name],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if result.returncode != 0:
                raise SetupError(f"kernel {self.abi} has no module {name!r} "
                                 f"({result.stderr.decode().strip()}); see Tests/System/guest/modules.txt")
            for line in result.stdout.decode().splitlines():
                words = line.split()
                if words[:1] == ["insmod"]:
                    rel = os.path.relpath(words[1], mod_base)
                    copy(words[1], f"usr/lib/modules/{self.abi}/{rel}", 0o644)
        for meta in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
            copy(os.path.join(mod_base, meta), f"usr/lib/modules/{self.abi}/{meta}", 0o644)

        # the harness's guest side
        copy(os.path.join(self.guest_dir, "init"), "init", 0o755)
        for name in sorted(os.listdir(os.path.join(self.guest_dir, "bin"))):
            copy(os.path.join(self.guest_dir, "bin", name), f"usr/local/bin/{name}", 0o755)
        tree["etc/evcapture-kernel"] = (stat.S_IFREG | 0o644, f"{self.abi}\n".encode(), None)

        # modules.dep etc. for the subset: depmod on a staging copy of just the modules
        staging = os.path.join(self.cache, f"depmod.{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        try:
            for path, (mode, data, _) in tree.items():
                if path.startswith(f"usr/lib/modules/{self.abi}/") and data is not None:
                    dest = os.path.join(staging, "lib", "modules", path[len(f"usr/lib/modules/"):])
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    with open(dest, "wb") as f:
                        f.write(data)
            run(["depmod", "-b", staging, self.abi])
            mdir = os.path.join(staging, "lib", "modules", self.abi)
            for name in os.listdir(mdir):
                if name.startswith("modules.") and name not in ("modules.order", "modules.builtin",
                                                                 "modules.builtin.modinfo"):
                    copy(os.path.join(mdir, name), f"usr/lib/modules/{self.abi}/{name}", 0o644)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

        entries = [(path, mode, data, link) for path, (mode, data, link) in sorted(tree.items())]
        return cpio_archive(entries)


# ----------------------------------------------------------------------------- builds

def build_fakeuvc(build_dir):
    """Compiles the fake camera into .build-systest/ when its source (or gcc) changed."""
    binary = os.path.join(build_dir, "fakeuvc")
    stamp = binary + ".sum"
    gcc_version = run(["gcc", "-dumpfullversion"]).strip()
    digest = f"{file_digest(FAKEUVC_SOURCE)} {gcc_version}"
    try:
        with open(stamp) as f:
            current = f.read().strip()
    except OSError:
        current = ""
    if current != digest or not os.path.exists(binary):
        say("compiling the fake camera (Tests/System/fakeuvc/fakeuvc.c)")
        run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", binary + ".tmp", FAKEUVC_SOURCE])
        os.replace(binary + ".tmp", binary)
        atomic_write(stamp, digest.encode())
    return binary


def build_bundle():
    say("swift build --build-tests")
    started = time.monotonic()
    result = subprocess.run(["swift", "build", "--build-tests"], cwd=REPO)
    if result.returncode != 0:
        raise SetupError("swift build --build-tests failed")
    say(f"build done in {time.monotonic() - started:.1f}s")


# ------------------------------------------------------------------ libcamera 0.3

LIBCAMERA3_DIR = os.path.join(REPO, ".build-libcamera-0.3")  # Tests/libcamera-versions' output
LIBCAMERA3_EVENTS = "events-libcamera-0.3.jsonl"
LIBCAMERA3_SUITES = ["SystemTests.LibcameraVimcSystemTests", "SystemTests.LibcameraVimcDaemonSystemTests"]


def libcamera3_filters(args):
    """The Swift Testing filters of the second pass: the vimc suites the run's filters select
    (a filter matching a suite's id selects it; one naming a suite's test keeps its own words)."""
    filters = []
    for f in args.filter or ["SystemTests"]:
        for suite in LIBCAMERA3_SUITES:
            short = suite.split(".", 1)[1]
            try:
                whole = re.search(f, suite) is not None
            except re.error:
                whole = False
            if whole:
                filters.append(re.escape(suite))
            elif short in f:
                filters.append(f)
    return sorted(set(filters))


def system_libcamera_version():
    result = subprocess.run(["pkg-config", "--modversion", "libcamera"], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else ""


def prepare_libcamera3(args, bundle, build_dir):
    """The vimc suites' second pass runs against bookworm-backports' libcamera 0.3.x, which
    Tests/libcamera-versions unpacks into .build-libcamera-0.3/root (library, IPA modules) and
    links a bridge against (.build-libcamera-0.3/bridge). The test bundle and the evcapture
    next to it are laid out again in .build-systest/libcamera-0.3/ with that bridge beside them,
    where the loader looks first (next to the executable): no switch in evcapture itself.
    Returns the pass's plan, or raises SetupError saying what is missing."""
    multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip() or "x86_64-linux-gnu"
    root = os.path.join(LIBCAMERA3_DIR, "root", "usr")
    libdir = os.path.join(root, "lib", multiarch)
    bridge = os.path.join(LIBCAMERA3_DIR, "bridge", "libevcapture-libcamera.so")
    pc = os.path.join(libdir, "pkgconfig", "libcamera.pc")
    ipa = os.path.join(libdir, "libcamera", "ipa_vimc.so")
    sources = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(REPO, "Sources", "CLibcameraBridge")) for f in fs]
    stale = not all(os.path.isfile(f) for f in (bridge, pc, ipa)) or \
        os.path.getmtime(bridge) < max(os.path.getmtime(f) for f in sources + [os.path.join(REPO, "Tests", "libcamera-versions")])
    if stale:
        if args.offline:
            raise SetupError(f"--offline: no current libcamera 0.3 bridge in {bridge} (run Tests/libcamera-versions)")
        say("Tests/libcamera-versions (bookworm-backports' libcamera 0.3 and its bridge)")
        if subprocess.run([os.path.join(REPO, "Tests", "libcamera-versions")], cwd=REPO).returncode != 0:
            raise SetupError("Tests/libcamera-versions failed: no libcamera 0.3 for the vimc suites' second pass")
    version = ""
    with open(pc) as f:
        for line in f:
            if line.startswith("Version:"):
                version = line.split(":", 1)[1].strip()
    layout = os.path.join(build_dir, "libcamera-0.3")
    shutil.rmtree(layout, ignore_errors=True)
    os.makedirs(layout)
    for source in (bundle, os.path.join(os.path.dirname(bundle), "evcapture")):
        target = os.path.join(layout, os.path.basename(source))
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
    shutil.copy2(bridge, os.path.join(layout, os.path.basename(bridge)))
    env = {"LD_LIBRARY_PATH": libdir,
           "LIBCAMERA_IPA_MODULE_PATH": os.path.join(libdir, "libcamera"),
           "LIBCAMERA_IPA_PROXY_PATH": os.path.join(root, "libexec", "libcamera"),
           "LIBCAMERA_IPA_CONFIG_PATH": os.path.join(root, "share", "libcamera", "ipa"),
           "EVCAPTURE_LIBCAMERA_VERSION": version}
    return {"bundle": os.path.join(layout, os.path.basename(bundle)), "env": env, "version": version}


# ------------------------------------------------------------------------------ guest

def write_run_plan(out_dir, args, bundle, fakeuvc, vimc, loopback, libcamera3=None):
    """The per-run instructions the guest reads from the output share."""
    q = shlex.quote
    steps = []
    env = {"EVCAPTURE_SYSTEST": "1", "EVCAPTURE_FAKEUVC": fakeuvc, "EVCAPTURE_REPO": REPO,
           "EVCAPTURE_SYSTEST_OUT": out_dir, "EVCAPTURE_VIMC_MODULE": vimc,
           "EVCAPTURE_V4L2LOOPBACK_MODULE": loopback,
           "EVCAPTURE_LIBCAMERA_VERSION": system_libcamera_version()}
    for kv in args.env:
        name, value = kv.split("=", 1)
        env[name] = value
    for i, script in enumerate(args.shell_script, start=1):
        # a copy in the output directory, so the script may change while the guest runs
        copy = os.path.join(out_dir, f"script-{i}-{os.path.basename(script)}")
        shutil.copyfile(script, copy)
        steps.append(("script " + os.path.basename(script),
                      f"EVC_SCRIPT={q(os.path.abspath(script))} evc-host /bin/sh {q(copy)}"))
    if not args.no_bundle:
        argv = [bundle, "--testing-library", "swift-testing",
                "--event-stream-output-path", os.path.join(out_dir, "events.jsonl"), "--event-stream-version", "0"]
        for f in args.filter or ["SystemTests"]:
            argv += ["--filter", f]
        for s in args.skip:
            argv += ["--skip", s]
        if not args.parallel:
            argv.append("--no-parallel")
        steps.append(("swift-testing bundle", "evc-host " + " ".join(q(a) for a in argv)))
        if libcamera3:
            argv = ["env"] + [f"{k}={v}" for k, v in sorted(libcamera3["env"].items())] + [
                libcamera3["bundle"], "--testing-library", "swift-testing",
                "--event-stream-output-path", os.path.join(out_dir, LIBCAMERA3_EVENTS), "--event-stream-version", "0"]
            for f in libcamera3["filters"]:
                argv += ["--filter", f]
            for s in args.skip:
                argv += ["--skip", s]
            argv.append("--no-parallel")
            steps.append((f"swift-testing bundle, libcamera {libcamera3['version']}", "evc-host " + " ".join(q(a) for a in argv)))
    lines = [f"export {name}={q(value)}" for name, value in sorted(env.items())]
    lines += [f"EVC_OUT_HOST={q(out_dir)}", f"EVC_REPO={q(REPO)}",
              f"EVC_PROJECT_RULES={0 if args.no_project_rules else 1}",
              f"EVC_VERBOSE={1 if args.verbose else 0}",
              f"EVC_STEP_COUNT={len(steps)}"]
    for i, (title, command) in enumerate(steps, start=1):
        lines.append(f"EVC_STEP_{i}_TITLE={q(title)}")
        with open(os.path.join(out_dir, f"step-{i}.sh"), "w") as f:
            f.write(command + "\n")
    with open(os.path.join(out_dir, "plan.env"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return steps


def qemu_command(args, kernel, initramfs, out_dir):
    cmdline = ["console=ttyS0", "panic=-1"] + (["loglevel=6"] if args.verbose else ["quiet", "loglevel=3"]) + [
               # under a loaded host the emulated timer can look broken to the boot-time check
               "no_timer_check",
               # devices use MSI; routing legacy IRQs through ACPI is slow under TCG
               "acpi=noirq", "rdinit=/init"]
    qemu = [os.environ.get("EVCAPTURE_SYSTEST_QEMU", "qemu-system-x86_64"),
            "-accel", "tcg", "-m", str(args.memory), "-smp", str(args.cpus),
            "-nodefaults", "-no-user-config", "-no-reboot", "-display", "none",
            "-serial", "stdio",
            "-kernel", kernel["vmlinux"], "-initrd", initramfs,
            "-append", " ".join(w for w in cmdline if w),
            "-virtfs", "local,path=/,mount_tag=evchost,security_model=none,readonly=on,multidevs=remap",
            "-virtfs", f"local,path={out_dir.replace(',', ',,')},mount_tag=evcout,security_model=none,multidevs=remap"]
    if os.path.exists(QBOOT):
        qemu += ["-bios", QBOOT]
    return qemu


REBOOT_NOISE = re.compile(rb"^\[ *[0-9.]+\] reboot: ")


class Console:
    """Streams the guest's serial console to stdout and to a log file."""

    def __init__(self, log_path, quiet, prefix=b""):
        self.log = open(log_path, "wb")
        self.quiet = quiet
        self.prefix = prefix  # "[2] " on the lines of the second guest of a sharded run
        self.partial = b""
        self.text = bytearray()

    def feed(self, chunk):
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()
        self._emit(lines)

    def close(self):
        if self.partial:
            self._emit([self.partial])
            self.partial = b""
        self.log.close()

    def _emit(self, lines):
        if not lines:
            return
        data = b"\n".join(line.rstrip(b"\r") for line in lines) + b"\n"
        self.text += data
        self.log.write(data)
        self.log.flush()
        shown = [self.prefix + line for line in data.split(b"\n")[:-1] if self.shown(line)]
        if shown:
            sys.stdout.buffer.write(b"\n".join(shown) + b"\n")
            sys.stdout.flush()

    def shown(self, line):
        if self.quiet:
            return line.startswith(b"evc-guest:")
        return not REBOOT_NOISE.match(line)  # the kernel's own goodbye is always printed


RUNNING_GUESTS = set()  # the QEMU processes of this run, killed on an interrupt


def kill_group(proc):
    """SIGKILL to a guest's process group; a QEMU that has just exited (its group gone) is
    not an error: the timeout or the interrupt raced its own end."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def boot(args, qemu, console_log, status_path, prefix=b""):
    """Boots once; returns (outcome, seconds, console text). outcome: 'done', 'timeout',
    'crashed' or 'early-crash' (died before the guest's init ran: worth a retry)."""
    started = time.monotonic()
    console = Console(console_log, args.quiet, prefix)
    proc = subprocess.Popen(qemu, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    RUNNING_GUESTS.add(proc)
    fd = proc.stdout.fileno()
    outcome = None
    try:
        while True:
            left = started + args.timeout - time.monotonic()
            if left <= 0:
                outcome = "timeout"
                break
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                console.feed(chunk)
    except KeyboardInterrupt:
        kill_group(proc)
        proc.wait()
        console.close()
        raise
    if outcome == "timeout":
        kill_group(proc)
    rc = proc.wait()
    RUNNING_GUESTS.discard(proc)
    console.close()
    text = console.text.decode(errors="replace")
    if outcome is None:
        if os.path.exists(status_path) and "end" in open(status_path).read().split():
            outcome = "done"
        elif "evc-guest: init started" not in text:
            outcome = "early-crash"
            say(f"the guest died before its init ran (QEMU status {rc})")
        else:
            outcome = "crashed"
            say(f"the guest stopped without finishing (QEMU status {rc}; kernel panic?)")
    return outcome, time.monotonic() - started, text


# ---------------------------------------------------------------------------- results

def read_status(status_path):
    statuses = {}
    try:
        with open(status_path) as f:
            for line in f:
                words = line.split()
                if len(words) == 3 and words[0] == "step":
                    statuses[int(words[1])] = int(words[2])
    except OSError:
        pass
    return statuses


# ------------------------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="Tests/System/run",
        description="Boot Debian's kernel under QEMU (TCG) and run evcapture's system tests inside it.",
        epilog="Exit status: 0 all passed; 1 a test or step failed; 2 setup/usage error; "
               "3 no system test ran; 124 timeout; 125 the guest crashed. See Tests/System/README.md.")
    p.add_argument("--filter", action="append", default=[], metavar="PATTERN",
                   help="Swift Testing --filter for the bundle (repeatable; default: SystemTests)")
    p.add_argument("--skip", action="append", default=[], metavar="PATTERN",
                   help="Swift Testing --skip for the bundle (repeatable)")
    p.add_argument("--shell-script", action="append", default=[], metavar="FILE",
                   help="also run FILE with /bin/sh in the guest, chrooted into the host tree, "
                        "before the bundle (repeatable)")
    p.add_argument("--no-bundle", action="store_true", help="run only the --shell-script steps")
    p.add_argument("--no-build", action="store_true", help="do not run swift build --build-tests first")
    p.add_argument("--bundle", metavar="PATH", help="test bundle (default .build/debug/evcapturePackageTests.xctest)")
    p.add_argument("--guests", type=int, metavar="N",
                   default=int(os.environ.get("EVCAPTURE_SYSTEST_GUESTS", min(4, max(1, (os.cpu_count() or 1) // 2)))),
                   help="boot N guests at once and split the suites between them (default: one per two "
                        "cores, at most 4; a run with --filter boots one)")
    p.add_argument("--parallel", action="store_true", help="let Swift Testing run tests in parallel (default: serial)")
    p.add_argument("-e", "--env", action="append", default=[], metavar="NAME=VALUE",
                   help="environment variable for the guest steps (repeatable)")
    p.add_argument("--no-project-rules", action="store_true",
                   help="do not install the repository's udev-rules/*.rules into the guest's udevd")
    p.add_argument("--timeout", type=float, default=float(os.environ.get("EVCAPTURE_SYSTEST_TIMEOUT", 2700)),
                   metavar="SEC", help="stop a guest after SEC seconds (default 2700: a fresh run of every suite took 1538 s with Debian 13 building beside it)")
    p.add_argument("--memory", type=int, default=2048, metavar="MIB", help="guest memory (default 2048)")
    p.add_argument("--cpus", type=int, default=1, metavar="N",
                   help="guest CPUs (default 1: with more, GadgetFS loses back-to-back control "
                        "writes to the fake camera; see README.md)")
    p.add_argument("--offline", action="store_true", help="never ask apt; use the cached kernel")
    p.add_argument("--prepare-only", action="store_true", help="fill the cache and build, do not boot")
    p.add_argument("-q", "--quiet", action="store_true", help="do not echo the guest console (still logged)")
    p.add_argument("-v", "--verbose", action="store_true", help="kernel messages and guest boot steps")
    args = p.parse_args(argv)
    for kv in args.env:
        if "=" not in kv or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", kv.split("=", 1)[0]):
            p.error(f"--env wants NAME=VALUE, got {kv!r}")
    for script in args.shell_script:
        if not os.path.isfile(script):
            p.error(f"--shell-script: no such file: {script}")
    if args.no_bundle and not args.shell_script and not args.prepare_only:
        p.error("--no-bundle without --shell-script leaves nothing to run")
    return args


def interrupt(signo, frame):
    raise KeyboardInterrupt  # boot() then kills QEMU (its own process group) before exiting


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGHUP, interrupt)
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                         "evcapture-systest")
    os.makedirs(cache, exist_ok=True)
    build_dir = os.path.join(REPO, ".build-systest")
    os.makedirs(build_dir, exist_ok=True)

    # one run per worktree at a time (the output directory), one preparer per cache
    worktree_lock = open(os.path.join(build_dir, "lock"), "w")
    try:
        fcntl.flock(worktree_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say("another Tests/System/run is active in this worktree; waiting")
        fcntl.flock(worktree_lock, fcntl.LOCK_EX)

    try:
        with open(os.path.join(cache, "lock"), "w") as cache_lock:
            fcntl.flock(cache_lock, fcntl.LOCK_EX)
            kernel = Kernel(cache, args.offline).prepare()
            try:
                vimc = Vimc(build_dir, kernel, args.offline).prepare()
            except SetupError as e:
                # Only the vimc tests need it: they fail, saying vimc is not loaded; the rest run.
                say(f"warning: vimc not built, the guest will have no vimc: {e}")
                vimc = ""
            try:
                loopback = V4L2Loopback(build_dir, kernel, args.offline).prepare()
            except SetupError as e:
                # Only the H.264 camera tests need it: they fail, saying it is missing; the rest run.
                say(f"warning: v4l2loopback not built, the guest will have no H.264 camera: {e}")
                loopback = ""
            initramfs = Initramfs(cache, kernel, extra_modules=[vimc] if vimc else []).prepare()
            os.utime(initramfs)  # keep it among the newest while this run uses it
        fakeuvc = build_fakeuvc(build_dir)
        if not args.no_build and not args.no_bundle:
            build_bundle()
    except SetupError as e:
        say(f"error: {e}")
        return EXIT_SETUP
    bundle = os.path.abspath(args.bundle or os.path.join(REPO, ".build", "debug", "evcapturePackageTests.xctest"))
    if not args.no_bundle and not os.path.isfile(bundle):
        say(f"error: no test bundle at {bundle} (run swift build --build-tests)")
        return EXIT_SETUP
    libcamera3, libcamera3_problem = None, None
    filters = [] if args.no_bundle else libcamera3_filters(args)
    if filters:
        try:
            libcamera3 = dict(prepare_libcamera3(args, bundle, build_dir), filters=filters)
        except (SetupError, OSError) as e:
            libcamera3_problem = f"libcamera 0.3: {e}"
            say(f"error: {libcamera3_problem}; the vimc suites run against the system's libcamera only")
    t_prepared = time.monotonic()
    say(f"ready: kernel {kernel['abi']} ({kernel['version']}), {os.path.basename(initramfs)}, "
        f"prepared in {t_prepared - T_START:.1f}s")
    if args.prepare_only:
        return EXIT_OK

    if os.path.exists(os.path.join(build_dir, "result.json")):
        os.unlink(os.path.join(build_dir, "result.json"))
    plans = plan_guests(args, bundle, build_dir, LIBCAMERA3_SUITES, say)
    results = [None] * len(plans)

    def run(index):
        results[index - 1] = run_guest(args, index, len(plans), plans[index - 1], build_dir, bundle,
                                       (kernel, initramfs, fakeuvc, vimc, loopback), libcamera3)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(2, len(plans) + 1)]
    try:
        for thread in threads:
            thread.start()
        run(1)
        for thread in threads:
            while thread.is_alive():
                thread.join(1.0)
    except KeyboardInterrupt:
        for proc in list(RUNNING_GUESTS):
            kill_group(proc)
        say("interrupted")
        return 130

    # ---- verdict
    status = EXIT_OK
    problems = []
    counts = counts3 = None
    for index, guest in enumerate(results, start=1):
        who = f"guest {index}: " if len(results) > 1 else ""
        if guest["outcome"] == "timeout":
            status = EXIT_TIMEOUT
            problems.append(f"{who}timeout: the guest was still running after {args.timeout:g}s (killed)")
        elif guest["outcome"] in ("crashed", "early-crash"):
            status = EXIT_CRASHED
            panic = re.search(r"Kernel panic[^\n]*", guest["console"])
            problems.append(f"{who}the guest crashed" + (f": {panic.group(0)}" if panic else " (no status written)"))
        for i, (title, _) in enumerate(guest["steps"], start=1):
            rc = guest["statuses"].get(i)
            if rc is None:
                if status == EXIT_OK:
                    status = EXIT_CRASHED
                problems.append(f"{who}step {i} ({title}) reported no status")
            elif rc != 0:
                status = status or EXIT_FAILED
                problems.append(f"{who}step {i} ({title}) exited with status {rc}")
        if guest["libcamera3"] and guest["outcome"] == "done" and guest["counts3"] is None:
            status = status or EXIT_FAILED
            problems.append(f"{who}the libcamera {libcamera3['version']} pass wrote no Swift Testing event stream")
        if not args.no_bundle and guest["outcome"] == "done" and guest["counts"] is None:
            status = status or EXIT_FAILED
            problems.append(f"{who}the bundle wrote no Swift Testing event stream")
        counts = add_counts(counts, guest["counts"])
        counts3 = add_counts(counts3, guest["counts3"])
    if libcamera3_problem:
        status = status or EXIT_FAILED
        problems.append(libcamera3_problem)
    all_counts = add_counts(counts, counts3)
    if not args.no_bundle and all(guest["outcome"] == "done" for guest in results) and all_counts is not None:
        passed, failed, skipped, stray = all_counts
        if failed or stray:
            status = status or EXIT_FAILED
        if passed + failed + skipped == 0:
            # Swift Testing also exits non-zero when nothing matched: say what happened
            status = EXIT_NOTHING_RAN if status in (EXIT_OK, EXIT_FAILED) else status
            problems.append(f"no system test ran (filter: {' '.join(args.filter or ['SystemTests'])})")
    record_suite_seconds(build_dir, [guest["out_dir"] for guest in results])

    # ---- summary
    print("", flush=True)
    for problem in problems:
        say(f"FAILED: {problem}")
    if all_counts is not None:
        passed, failed, skipped, stray = all_counts
        extra = f", {stray} issue(s) outside tests" if stray else ""
        say(f"system tests: {passed} passed, {failed} failed, {skipped} skipped{extra}")
        if failed or stray:
            for guest in results:
                for name in ("events.jsonl", LIBCAMERA3_EVENTS):
                    path = os.path.join(guest["out_dir"], name)
                    if os.path.exists(path):
                        for line in failures(path):
                            say(f"  failed: {line}")
    if counts3 is not None:
        suites = sorted({s for guest in results if guest["libcamera3"] for s in guest["libcamera3"]["filters"]})
        say(f"  of them against libcamera {libcamera3['version']} ({' '.join(suites)}): "
            f"{counts3[0]} passed, {counts3[1]} failed, {counts3[2]} skipped")
    seconds = max(guest["seconds"] for guest in results)
    timing = f"total {time.monotonic() - T_START:.1f}s (prepare {t_prepared - T_START:.1f}s, " \
             f"guest {seconds:.1f}s"
    if len(results) > 1:
        timing = timing.replace("guest ", f"{len(results)} guests at once, the longest ")
    ready = re.search(r"evc-guest: ready after ([0-9.]+)s", results[0]["console"])
    if ready:
        timing += f", of it boot {float(ready.group(1)):.1f}s"
    say(timing + ")")
    result = {"status": status, "problems": problems, "seconds": round(time.monotonic() - T_START, 1),
              "boot_seconds": float(ready.group(1)) if ready else None, "guests": len(results)}
    if all_counts is not None:
        result.update(zip(("passed", "failed", "skipped", "stray_issues"), all_counts))
    if counts3 is not None:
        result["libcamera_0_3"] = dict(zip(("passed", "failed", "skipped", "stray_issues"), counts3),
                                       version=libcamera3["version"])
    atomic_write(os.path.join(build_dir, "result.json"), json.dumps(result, indent=1).encode())
    logs = ", ".join(os.path.relpath(guest["console_log"]) for guest in results)
    say(f"console log{'s' if len(results) > 1 else ''}: {logs}; "
        f"result: {'PASS' if status == EXIT_OK else f'FAIL (exit status {status})'}")
    return status


def add_counts(a, b):
    if a is None or b is None:
        return b if a is None else a
    return tuple(x + y for x, y in zip(a, b))


def run_guest(args, index, guests, filters, build_dir, bundle, lab, libcamera3):
    """Boots guest `index` (of `guests`) with the run's suites that `filters` select, in its own
    output directory (out/, out-2/, ...) and console log; returns what it did."""
    kernel, initramfs, fakeuvc, vimc, loopback = lab
    guest_args = copy.copy(args)
    guest_args.filter = filters
    suffix = "" if index == 1 else f"-{index}"
    out_dir = os.path.join(build_dir, "out" + suffix)
    console_log = os.path.join(build_dir, f"console{suffix}.log")
    guest_libcamera3 = None
    if libcamera3 and not args.no_bundle:
        selected = libcamera3_filters(guest_args)
        guest_libcamera3 = dict(libcamera3, filters=selected) if selected else None
    prefix = f"[{index}] ".encode() if guests > 1 else b""
    attempts = 3
    for attempt in range(1, attempts + 1):
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(out_dir)
        steps = write_run_plan(out_dir, guest_args, bundle, fakeuvc, vimc, loopback, guest_libcamera3)
        qemu = qemu_command(args, kernel, initramfs, out_dir)
        if args.verbose:
            say("qemu: " + " ".join(shlex.quote(a) for a in qemu))
        status_path = os.path.join(out_dir, "status")
        outcome, seconds, console = boot(args, qemu, console_log, status_path, prefix)
        if outcome != "early-crash" or attempt == attempts:
            break
        say(f"{prefix.decode()}booting again (attempt {attempt + 1} of {attempts})")
    return {"outcome": outcome, "seconds": seconds, "console": console, "steps": steps,
            "statuses": read_status(status_path), "libcamera3": guest_libcamera3,
            "counts": None if args.no_bundle else count_results(os.path.join(out_dir, "events.jsonl")),
            "counts3": count_results(os.path.join(out_dir, LIBCAMERA3_EVENTS)) if guest_libcamera3 else None,
            "out_dir": out_dir, "console_log": console_log}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
