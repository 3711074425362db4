"""The package-test VM's root file system: a real Debian system built with mmdebstrap
from the Debian archive (Tests/System/debian/packages.txt, .../customize), turned into an
ext4 image and cached like the kernel. QEMU opens it with snapshot=on, so every boot
starts from the same pristine system and the cache is never written by a guest."""
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time

from harness import SetupError, as_root, file_digest, run, say

SYSTEM_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
DEBIAN_DIR = os.path.join(SYSTEM_DIR, "debian")
KEEP_IMAGES = 2
IMAGE_SIZE = "2G"  # sparse; the system takes about 350 MB


def host_suite():
    """The host's Debian release: the package is built against its libraries."""
    with open("/etc/os-release") as f:
        m = re.search(r"^VERSION_CODENAME=(\S+)", f.read(), re.M)
    if not m:
        raise SetupError("/etc/os-release names no VERSION_CODENAME (not Debian?)")
    return m.group(1).strip('"')


SUITES = ("bookworm", "trixie")  # Debian 12 and 13: the releases packages.txt is written for


def packages(suite):
    """packages.txt's names for SUITE: each line's name, unless a [SUITE,...] after it names
    other releases only."""
    if suite not in SUITES:
        raise SetupError(f"no package list for Debian {suite!r} (packages.txt knows {', '.join(SUITES)})")
    names = []
    with open(os.path.join(DEBIAN_DIR, "packages.txt")) as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) > 2 or (len(words) == 2 and not re.fullmatch(r"\[[a-z,]+\]", words[1])):
                raise SetupError(f"packages.txt:{number}: expected NAME [SUITE,...], got {line.strip()!r}")
            suites = words[1][1:-1].split(",") if len(words) == 2 else list(SUITES)
            unknown = [s for s in suites if s not in SUITES]
            if unknown:
                raise SetupError(f"packages.txt:{number}: unknown release {', '.join(unknown)}")
            if suite in suites:
                names.append(words[0])
    return names


class DebianRoot:
    """SUITE's root image (the host's release by default), cached by suite and fingerprint."""

    def __init__(self, cache, offline=False, suite=None):
        self.cache = cache
        self.offline = offline
        self.suite = suite or host_suite()

    def fingerprint(self):
        h = hashlib.sha256()
        h.update(f"{self.suite} {IMAGE_SIZE} {' '.join(packages(self.suite))}\n".encode())
        h.update(file_digest(os.path.join(DEBIAN_DIR, "customize")).encode())
        return h.hexdigest()[:16]

    def prepare(self):
        """The image's path, made first if needed. A lock of the suite's own: making one
        (minutes) holds up neither the other release's package tests nor the kernel's cache."""
        prefix = f"debian-{self.suite}-"
        path = os.path.join(self.cache, f"{prefix}{self.fingerprint()}.ext4")
        with open(os.path.join(self.cache, f"debian-{self.suite}.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.exists(path):
                if self.offline:
                    raise SetupError(f"--offline: no Debian root file system {os.path.basename(path)} in {self.cache}")
                self._build(path)
            os.utime(path)
            # the newest KEEP_IMAGES of this suite are kept
            images = sorted((p for p in os.listdir(self.cache) if p.startswith(prefix) and p.endswith(".ext4")),
                            key=lambda p: os.stat(os.path.join(self.cache, p)).st_mtime, reverse=True)
            for old in images[KEEP_IMAGES:]:
                os.unlink(os.path.join(self.cache, old))
        return path

    def _build(self, path):
        if not shutil.which("mmdebstrap") or not shutil.which("mke2fs"):
            raise SetupError("mmdebstrap and mke2fs are needed (apt-get install mmdebstrap e2fsprogs)")
        started = time.monotonic()
        tree = path + ".tree"
        tmp = path + ".tmp"
        run(as_root(["rm", "-rf", tree]))
        say(f"building the Debian {self.suite} root file system with mmdebstrap (once; cached)")
        try:
            # as root, so that file owners are real; mke2fs -d copies them into the image
            run(as_root(["mmdebstrap", "--quiet", "--mode=root", "--variant=minbase",
                         "--include=" + ",".join(packages(self.suite)),
                         "--customize-hook=sh " + os.path.join(DEBIAN_DIR, "customize") + ' "$1"',
                         self.suite, tree]))
            if os.path.exists(tmp):
                os.unlink(tmp)
            run(as_root(["mke2fs", "-q", "-t", "ext4", "-L", "evcroot", "-d", tree, tmp, IMAGE_SIZE]))
            run(as_root(["chown", f"{os.getuid()}:{os.getgid()}", tmp]))
            os.replace(tmp, path)
        finally:
            subprocess.run(as_root(["rm", "-rf", tree]))
        say(f"built {os.path.basename(path)} in {time.monotonic() - started:.0f}s "
            f"({int(subprocess.run(['du', '-m', path], stdout=subprocess.PIPE).stdout.split()[0])} MB used)")
