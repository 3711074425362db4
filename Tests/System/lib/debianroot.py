"""The package-test VM's root file system: a real Debian system built with mmdebstrap
from the Debian archive (Tests/System/debian/packages.txt, .../customize), turned into an
ext4 image and cached like the kernel. QEMU opens it with snapshot=on, so every boot
starts from the same pristine system and the cache is never written by a guest."""
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


def packages():
    names = []
    with open(os.path.join(DEBIAN_DIR, "packages.txt")) as f:
        for line in f:
            word = line.split("#", 1)[0].strip()
            if word:
                names.append(word)
    return names


class DebianRoot:
    def __init__(self, cache, offline=False):
        self.cache = cache
        self.offline = offline
        self.suite = host_suite()

    def fingerprint(self):
        h = hashlib.sha256()
        h.update(f"{self.suite} {IMAGE_SIZE} {' '.join(packages())}\n".encode())
        h.update(file_digest(os.path.join(DEBIAN_DIR, "customize")).encode())
        return h.hexdigest()[:16]

    def prepare(self):
        path = os.path.join(self.cache, f"debian-{self.suite}-{self.fingerprint()}.ext4")
        if not os.path.exists(path):
            if self.offline:
                raise SetupError(f"--offline: no Debian root file system {os.path.basename(path)} in {self.cache}")
            self._build(path)
        os.utime(path)
        images = sorted((p for p in os.listdir(self.cache) if p.startswith("debian-") and p.endswith(".ext4")),
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
                         "--include=" + ",".join(packages()),
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
