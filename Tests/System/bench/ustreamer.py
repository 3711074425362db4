#!/usr/bin/env python3
"""The MJPEG live view against µStreamer (Debian's `ustreamer`), in one boot, alternating
blocks: the same camera (vivid, YUYV 640×480 at 5 fps), both encoding every frame to JPEG
on the CPU at quality 75 (the live view's), on 127.0.0.1 without credentials. 5 fps: in the
emulated VM a frame's capture and encode take 30-70 ms for either, so at 10 fps and more
both use most of the one CPU and the figures are the queue's, not the servers'.

Then the same on a camera that sends MJPEG through a real driver (v4l2loopback fed JPEG
files by ffmpeg at the same rate), which both pass through without encoding (µStreamer
`--encoder HW`).

A block starts one server on the camera (evcapture's daemon with `[http]`, or µStreamer),
lets it run 3 s, then N viewers (one process, non-blocking sockets) read its stream for the
block's seconds, then the server stops. Per block:
  cpu      the server's CPU seconds (utime + stime of the process, /proc) over the block,
           per viewer-second (divided by N × seconds)
  latency  for every part a viewer received: the frame's kernel time (CLOCK_MONOTONIC:
           evcapture's X-Timestamp, µStreamer's X-UStreamer-Grab-Time with `?extra_headers=1`,
           in whole ms, which makes its latency up to 1 ms longer) -> the part's last byte
           read by the viewer
The blocks run N = 1, 4, 16 viewers, the two servers in alternating order, `--rounds` times.
vivid stamps its buffers with nominal times that can run a few ms ahead of the clock, the
same for both servers: compare the two, not the absolute figure.

Usage: ustreamer.py EVCAPTURE [--rounds N] [--block S] [--viewers 1,4,16] [--port P] [--cameras yuyv,mjpeg]
Prints "figure mjpeg-CAMERA-VIEWERS-SERVER: ..." and "figure mjpeg-compare CAMERA VIEWERS: ..." lines; exits 1 if something could not be measured.
"""
import argparse
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import cpu_seconds, wait_for  # noqa: E402
from recording import p99_ratio, quantile  # noqa: E402
from shutter import Daemon  # noqa: E402
from vivid import set_rate, vivid_node  # noqa: E402

FPS = 5
QUALITY = 75  # the live view's (LiveViewSettings.previewQuality)


def log(*a):
    print(*a, flush=True)


class Dechunker:
    """HTTP/1.1 chunked transfer coding, undone as bytes come."""

    def __init__(self):
        self.buf = bytearray()
        self.left = 0  # bytes of the current chunk still to come, then its CRLF

    def feed(self, data):
        self.buf += data
        out = bytearray()
        while self.buf:
            if self.left > 0:
                take = min(self.left, len(self.buf))
                out += self.buf[:take]
                del self.buf[:take]
                self.left -= take
                if self.left > 0:
                    break
                self.left = -2  # the chunk's CRLF
            if self.left == -2:
                if len(self.buf) < 2:
                    break
                del self.buf[:2]
                self.left = 0
            i = self.buf.find(b"\r\n")
            if i < 0:
                break
            size = int(bytes(self.buf[:i]).split(b";")[0], 16)
            del self.buf[:i + 2]
            if size == 0:
                raise RuntimeError("the stream ended")
            self.left = size
        return bytes(out)


class Viewer:
    """One stream reader: the response head, then parts (headers with Content-Length and
    X-Timestamp, then the JPEG), each part's kernel time -> last byte kept."""

    def __init__(self, port, path):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        self.sock.setblocking(False)
        self.buf = bytearray()
        self.head = None
        self.need = None
        self.stamp = None
        self.parts = 0
        self.chunked = None

    def feed(self, data, now, out):
        if self.chunked is not None:
            data = self.chunked.feed(data)
        self.buf += data
        while True:
            if self.need is None:
                i = self.buf.find(b"\r\n\r\n")
                if i < 0:
                    return
                block = bytes(self.buf[:i]).decode("latin-1")
                del self.buf[:i + 4]
                if self.head is None:
                    self.head = block
                    if not block.startswith("HTTP/1.") or " 200 " not in block.split("\r\n")[0]:
                        raise RuntimeError(f"the stream answered: {block[:300]!r}")
                    if re.search(r"(?im)^transfer-encoding:\s*chunked", block):
                        self.chunked = Dechunker()
                        rest = bytes(self.buf)
                        self.buf.clear()
                        self.buf += self.chunked.feed(rest)
                    continue
                length = re.search(r"(?im)^content-length:\s*(\d+)", block)
                stamp = re.search(r"(?im)^x-ustreamer-grab-time:\s*([\d.]+)", block) or \
                    re.search(r"(?im)^x-timestamp:\s*([\d.]+)", block)
                if not length:
                    continue  # a boundary line alone
                if not stamp:
                    raise RuntimeError(f"a part without the frame's time: {block[:300]!r}")
                if os.environ.get("EVC_BENCH_SHOW_PART") and self.parts == 0:
                    log(f"first part's headers: {block!r}")
                self.need, self.stamp = int(length.group(1)), float(stamp.group(1))
            if len(self.buf) < self.need:
                return
            del self.buf[:self.need]
            self.need = None
            self.parts += 1
            out.append(now - self.stamp)


def watch(port, path, viewers, seconds):
    """N viewers for `seconds`: the latencies (s) of every part read, and the parts per viewer."""
    vs = [Viewer(port, path) for _ in range(viewers)]
    by_fd = {v.sock.fileno(): v for v in vs}
    latencies = []
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select(list(by_fd), [], [], left)
        for fd in ready:
            v = by_fd[fd]
            data = v.sock.recv(1 << 20)
            now = time.clock_gettime(time.CLOCK_MONOTONIC)
            if not data:
                raise RuntimeError(f"the server closed a viewer after {v.parts} parts")
            v.feed(data, now, latencies)
    parts = [v.parts for v in vs]
    for v in vs:
        v.sock.close()
    return latencies, parts


def accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def wait_port(port, what, timeout=30):
    wait_for(f"{what} to listen on {port}", lambda: accepts(port), timeout)


class Evcapture:
    name = "evcapture"
    path = "/stream.mjpg"

    def __init__(self, exe, node, port, tmp, camera="yuyv"):
        self.exe, self.node, self.port, self.tmp = exe, node, port, tmp
        self.config = f"{tmp}/mjpeg.toml"
        os.makedirs(tmp + "/out", exist_ok=True)
        with open(self.config, "w") as f:
            f.write(f"""[camera]
device = "none"
capture-device = "{node}"
width = 640
height = 480
[sound]
play = "off"
[output]
directory = "{tmp}/out"
[http]
listen = "127.0.0.1:{port}"
max-clients = 20
""")

    def start(self):
        self.d = Daemon(self.exe, self.config, self.tmp, "mjpeg")
        self.d.wait_ready()
        wait_port(self.port, "evcapture")
        return self.d.proc.pid

    def stop(self):
        return self.d.stop()


class UStreamer:
    name = "ustreamer"
    path = "/stream?extra_headers=1"

    def __init__(self, exe, node, port, tmp, camera="yuyv"):
        # An MJPEG camera's frames pass through (`--encoder HW`: the camera's own JPEG), as
        # evcapture's live view sends them.
        fmt = ["--format", "YUYV", "--encoder", "CPU"] if camera == "yuyv" else ["--format", "MJPEG", "--encoder", "HW"]
        self.argv = [exe, "--device", node, "--resolution", "640x480", "--desired-fps", str(FPS),
                     "--quality", str(QUALITY), "--host", "127.0.0.1", "--port", str(port)] + fmt
        self.port, self.err = port, f"{tmp}/ustreamer.err"

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=open(self.err, "w"))
        wait_port(self.port, "ustreamer")
        return self.proc.pid

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return "killed after 20 s"


class LoopbackMJPEG:
    """A camera that sends MJPEG through a real driver: v4l2loopback (the module the lab
    built, $EVCAPTURE_V4L2LOOPBACK_MODULE) fed JPEG files by the ffmpeg CLI at FPS, as the
    system tests' LoopbackCamera does."""
    node = "/dev/video61"

    def __init__(self, tmp):
        module = os.environ.get("EVCAPTURE_V4L2LOOPBACK_MODULE", "")
        if not module:
            raise SystemExit("ustreamer.py: no v4l2loopback module (EVCAPTURE_V4L2LOOPBACK_MODULE)")
        frames = f"{tmp}/frames"
        os.makedirs(frames, exist_ok=True)
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size=640x480:rate={FPS}", "-t", "4",
                        "-c:v", "mjpeg", "-q:v", "4", "-pix_fmt", "yuvj422p", f"{frames}/%03d.jpg"], check=True, timeout=120)
        subprocess.run(["rmmod", "v4l2loopback"], capture_output=True)
        subprocess.run(["insmod", module, "exclusive_caps=1", "max_buffers=32", "video_nr=61", "card_label=bench-mjpeg"],
                       check=True)
        self.writer = subprocess.Popen(["ffmpeg", "-v", "error", "-re", "-loop", "1", "-framerate", str(FPS), "-i",
                                        f"{frames}/%03d.jpg", "-c", "copy", "-f", "v4l2", self.node],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/writer.err", "w"))
        def offered():
            r = subprocess.run(["v4l2-ctl", "-d", self.node, "--list-formats"], capture_output=True, text=True)
            return "Video Capture" in r.stdout and "'MJPG'" in r.stdout

        try:
            wait_for(f"{self.node} to offer MJPEG capture", offered, 30)
        except SystemExit:
            self.stop()
            raise SystemExit(f"ustreamer.py: {self.node} offers no MJPEG capture: {open(f'{tmp}/writer.err').read()}")

    def stop(self):
        self.writer.terminate()
        try:
            self.writer.wait(10)
        except subprocess.TimeoutExpired:
            self.writer.kill()
        subprocess.run(["rmmod", "v4l2loopback"], capture_output=True)


def measure(a, camera, servers, counts):
    """The alternating blocks on one camera; prints the figures; True when something failed."""
    cpu = {}  # (n, name) -> [cpu per viewer-second]
    lat = {}  # (n, name) -> [seconds]
    failed = False
    for r in range(a.rounds):
        for n in counts:
            order = servers if (r + counts.index(n)) % 2 == 0 else servers[::-1]
            for s in order:
                pid = s.start()
                try:
                    time.sleep(3)
                    before = cpu_seconds(pid)
                    t0 = time.monotonic()
                    latencies, parts = watch(s.port, s.path, n, a.block)
                    took = time.monotonic() - t0
                    used = cpu_seconds(pid) - before
                except (OSError, RuntimeError) as e:
                    log(f"{camera} round {r + 1} {n} viewers {s.name}: {e}")
                    failed = True
                    continue
                finally:
                    status = s.stop()
                cpu.setdefault((n, s.name), []).append(used / (n * took))
                lat.setdefault((n, s.name), []).extend(latencies)
                p50 = quantile(latencies, 0.5) * 1000 if latencies else float("nan")
                p99 = quantile(latencies, 0.99) * 1000 if latencies else float("nan")
                log(f"{camera} round {r + 1} {n:2d} viewers {s.name:9s}: cpu {used:.2f} s in {took:.1f} s "
                    f"({used / (n * took) * 1000:.1f} ms per viewer-second), parts per viewer {min(parts)}..{max(parts)}, "
                    f"latency p50 {p50:.1f} ms p99 {p99:.1f} ms (exit {status})")
    for n in counts:
        for s in servers:
            c, l = cpu.get((n, s.name), []), lat.get((n, s.name), [])
            if not c or not l:
                log(f"figure mjpeg-{camera}-{n}-{s.name}: not measured")
                failed = True
                continue
            log(f"figure mjpeg-{camera}-{n}-{s.name}: cpu {sum(c) / len(c) * 1000:.1f} ms per viewer-second; "
                f"latency n={len(l)} p50={quantile(l, 0.5) * 1e6:.0f}us p99={quantile(l, 0.99) * 1e6:.0f}us")
        e, u = lat.get((n, "evcapture"), []), lat.get((n, "ustreamer"), [])
        ce, cu = cpu.get((n, "evcapture"), []), cpu.get((n, "ustreamer"), [])
        if e and u and ce and cu:
            ratio, lo, hi = p99_ratio(e, u)
            me, mu = sum(ce) / len(ce) * 1000, sum(cu) / len(cu) * 1000
            log(f"figure mjpeg-compare {camera} {n}: cpu evcapture={me:.1f} ustreamer={mu:.1f} ms cpu-ratio={me / mu:.2f} "
                f"p99 evcapture={quantile(e, 0.99) * 1000:.1f} ustreamer={quantile(u, 0.99) * 1000:.1f} ms "
                f"difference={(quantile(e, 0.99) - quantile(u, 0.99)) * 1000:+.1f} ms p99-ratio={ratio:.2f} "
                f"interval={lo:.2f}-{hi:.2f} n={len(e)}/{len(u)}")
    return failed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("evcapture")
    p.add_argument("--ustreamer", default=shutil.which("ustreamer") or "/usr/bin/ustreamer")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--block", type=float, default=10, help="seconds of viewing per block")
    p.add_argument("--viewers", default="1,4,16")
    p.add_argument("--port", type=int, default=18290)
    p.add_argument("--cameras", default="yuyv,mjpeg", help="yuyv (vivid, both encode), mjpeg (v4l2loopback, both pass through)")
    a = p.parse_args()
    if not os.access(a.ustreamer, os.X_OK):
        raise SystemExit(f"ustreamer.py: no µStreamer at {a.ustreamer} (apt-get install ustreamer)")
    node = vivid_node()
    if not node:
        raise SystemExit("ustreamer.py: no vivid")
    set_rate(node, FPS)
    tmp = os.environ.get("TMPDIR", "/tmp") + "/evc-bench-mjpeg"
    os.makedirs(tmp, exist_ok=True)
    counts = [int(n) for n in a.viewers.split(",")]
    failed = False
    for camera in a.cameras.split(","):
        loopback = LoopbackMJPEG(tmp) if camera == "mjpeg" else None
        cam_node = loopback.node if loopback else node
        servers = [Evcapture(a.evcapture, cam_node, a.port, tmp, camera), UStreamer(a.ustreamer, cam_node, a.port + 1, tmp, camera)]
        what = f"vivid {node} YUYV 640x480 at {FPS} fps, JPEG quality {QUALITY}" if camera == "yuyv" else \
            f"v4l2loopback {cam_node} MJPEG 640x480 at {FPS} fps (fed by ffmpeg), passed through"
        log(f"{what}; {a.rounds} rounds of {a.block:.0f} s blocks, viewers {counts}")
        try:
            failed |= measure(a, camera, servers, counts)
        finally:
            if loopback:
                loopback.stop()
    set_rate(node, 5)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
