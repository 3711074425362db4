#!/usr/bin/env python3
"""The camera through libcamera (BENCHMARKS.md: "libcamera: ..."): shutter lag and CPU per
streaming second on vimc, against libcamera's own `cam`.

Run in the test VM by Tests/System/bench/guest.sh (EVC_BENCH_ONLY=libcamera, or as part of
every run). The camera is vimc through libcamera 0.0.3 ("platform/vimc.0 Sensor B", 360x240:
docs/libcamera.md; evcapture's release build opens libevcapture-libcamera.so next to it). A
uinput gpio-keys-like device (uinput-flood 1) presses KEY_VOLUMEDOWN for 100 ms per click.
Every buffer dequeued from a V4L2 node is recorded by the kernel's v4l2:v4l2_dqbuf trace event
(a tracing instance of its own, the CLOCK_MONOTONIC trace clock): the frames each program
got, with the driver's timestamp, which is libcamera's SensorTimestamp.

Rounds of two blocks in alternating order (emulated timings drift within a boot):
  evcapture  `evcapture run` with [camera] backend = "libcamera", stream = "always" (the ring
             runs while the session does), click = "photo". After a warm-up, CPU
             (utime+stime of the process and its children, /proc/PID/stat) over --seconds
             with nothing pressed, and the frames it dequeued in that time; then --clicks /
             --rounds clicks at a random phase: shutter lag = the photo's frame_time - the
             press's began time, and whether the photo is the dequeued frame nearest the press
  cam        `cam -c CAMERA -C -s width=360,height=240,pixelformat=P --strict-formats`, P the
             camera format evcapture's stream takes (docs/libcamera.md: MJPEG, else YUYV,
             else RGB888, else BGR888; the first cam configures unadjusted): the same warm-up,
             then CPU and frames dequeued over --seconds. evcapture copies each frame into
             its ring (24-bit RGB as it comes); cam only requeues (and prints a line per frame)
The frame interval is the mean gap between the frames evcapture dequeued while clicked; the
lag is also given in units of the gap between the two frames around each press (vimc's frames
come irregularly under TCG), where <= 0.5 means the photo is the frame nearest the press.

Usage: libcamera.py EVCAPTURE UINPUT_FLOOD [--clicks N] [--rounds N] [--seconds S]
Prints "figure libcamera ..." lines; exits 1 if something could not be measured.
"""
import argparse
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time

from tracing import TraceInstance

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import cpu_seconds  # noqa: E402
from shutter import Daemon, Keys, quantiles  # noqa: E402

CAMERA = "platform/vimc.0 Sensor B"
WIDTH, HEIGHT = 360, 240
WARM_UP = 5.0


def log(*a):
    print(*a, flush=True)


class DequeueTrace(TraceInstance):
    """The kernel's v4l2:v4l2_dqbuf event in a tracing instance of its own, trace clock mono."""

    LINE = re.compile(r"-(?P<tid>\d+)\s+\[\d+\].*?\s(?P<at>\d+\.\d+): v4l2_dqbuf: minor = (?P<minor>\d+),.*"
                      r"timestamp = (?P<ts>\d+),.*sequence = (?P<seq>\d+)")

    def __init__(self):
        super().__init__("evc-lcbench", "v4l2/v4l2_dqbuf", 2048)

    def events(self, tids):
        """(trace time s, buffer timestamp s, sequence) of every dequeue by one of tids."""
        out = []
        for line in self.lines():
            m = self.LINE.search(line)
            if m and int(m["tid"]) in tids:
                out.append((float(m["at"]), int(m["ts"]) / 1e9, int(m["seq"])))
        return out


def tree(pid):
    """pid and its descendants (libcamera may run an IPA module in a process of its own)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    found, grew = {pid}, True
    while grew:
        new = {p for p, pp in parents.items() if pp in found and p not in found}
        found |= new
        grew = bool(new)
    return found


def tree_cpu(pid):
    total = 0.0
    for p in tree(pid):
        try:
            total += cpu_seconds(p)
        except OSError:
            pass
    return total


def tree_tids(pid):
    tids = set()
    for p in tree(pid):
        try:
            tids |= {int(t) for t in os.listdir(f"/proc/{p}/task")}
        except OSError:
            pass
    return tids


def window(pid, trace, seconds):
    """CPU seconds and frames dequeued by pid's process tree over `seconds` of wall time."""
    trace.clear()
    c0, t0 = tree_cpu(pid), time.monotonic()
    time.sleep(seconds)
    c1, t1 = tree_cpu(pid), time.monotonic()
    frames = [e for e in trace.events(tree_tids(pid)) if t0 <= e[0] <= t1]
    return c1 - c0, t1 - t0, frames


def gaps(frames):
    ts = sorted(f[1] for f in frames)
    return [b - a for a, b in zip(ts, ts[1:])]


def write_config(path, out):
    with open(path, "w") as f:
        f.write(f"""[camera]
backend = "libcamera"
libcamera-camera = "{CAMERA}"
width = {WIDTH}
height = {HEIGHT}
stream = "always"
[handlers.primary]
click = "photo"
long-press = "none"
[sound]
play = "off"
[output]
directory = "{out}"
""")


def evcapture_block(a, keys, trace, tmp, block, clicks, r):
    out = f"{tmp}/out-{block}"
    os.makedirs(out, exist_ok=True)
    config = f"{tmp}/{block}.toml"
    write_config(config, out)
    d = Daemon(a.evcapture, config, tmp, block)
    d.wait_ready()
    time.sleep(WARM_UP)  # the session started, the ring running and filled
    pid = d.proc.pid
    err = open(d.err_path).read()
    m = re.search(r"v4l2\.format\W+(\w{4})", err)
    if m:
        r["format"] = m[1]
    cpu, wall, frames = window(pid, trace, a.seconds)
    r["cpu"].append(cpu)
    r["wall"].append(wall)
    r["frames"].append(len(frames))
    # clicks at a random phase against the frames, every dequeue of them traced
    trace.clear()
    # the frames before the first press in the trace too: without them its photo was judged
    # against the frames after it only (a photo of the frame before the press counted as not
    # the nearest, one after it as the nearest unchecked)
    time.sleep(0.3)
    seen = set()
    clicked = []
    for i in range(clicks):
        keys.click(100_000)
        began = d.wait_line(lambda o: o.get("event") == "capture" and o.get("phase") == "began"
                            and o.get("press") not in seen, 10)
        if not began:
            log(f"  evcapture: click {i}: no began line")
            r["failed"] += 1
            continue
        press = began[1]["press"]
        seen.add(press)
        photo = d.wait_line(lambda o: o.get("press") == press and o.get("event") in ("action", "error"), 30)
        if not photo or photo[1].get("event") != "action" or "frame_time" not in photo[1]:
            log(f"  evcapture: click {i}: no photo ({photo[1] if photo else 'timed out'})")
            r["failed"] += 1
            continue
        clicked.append((began[1]["time"], photo[1]["frame_time"]))
        time.sleep(random.uniform(0.3, 0.6))
    frames = sorted(f[1] for f in trace.events(tree_tids(pid)))
    r["click-gaps"] += gaps([(0, t, 0) for t in frames])[3:]
    for t_began, frame_time in clicked:
        r["lag"].append(frame_time - t_began)
        if frames:
            nearest = min(frames, key=lambda t: abs(t - t_began))
            r["nearest"].append(abs(nearest - frame_time) < 0.0005)
            before = [t for t in frames if t <= t_began]
            after = [t for t in frames if t > t_began]
            if before and after:
                r["local"].append(abs(frame_time - t_began) / (after[0] - before[-1]))
    r["clicks"] += clicks
    errors = [o for _, o in d.lines if o.get("event") == "error"]
    for o in errors[:3]:
        log(f"  evcapture: error line {o}")
    r["errors"] += len(errors)
    status = d.stop()
    if status != 0:
        log(f"  evcapture: daemon exit status {status}")
        r["failed"] += 1


def cam_block(a, trace, tmp, block, pixelformat, r):
    argv = ["cam", "-c", CAMERA, "-C", "-s", f"width={WIDTH},height={HEIGHT},pixelformat={pixelformat}",
            "--strict-formats"]
    out_path = f"{tmp}/{block}-cam.log"
    proc = subprocess.Popen(argv, stdout=open(out_path, "w"), stderr=subprocess.STDOUT)
    time.sleep(WARM_UP)
    if proc.poll() is not None:
        log(f"  cam exited {proc.returncode}: {' '.join(argv)}\n{open(out_path).read()[-2000:]}")
        r["failed"] += 1
        return
    cpu, wall, frames = window(proc.pid, trace, a.seconds)
    r["cpu"].append(cpu)
    r["wall"].append(wall)
    r["frames"].append(len(frames))
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    text = open(out_path).read()
    if "configuration" not in r:
        r["configuration"] = " | ".join(line.strip() for line in text.splitlines()[:6] if "fps" not in line)
    if not frames:
        log(f"  cam: no frames dequeued\n{text[-2000:]}")
        r["failed"] += 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("evcapture")
    p.add_argument("flood")
    p.add_argument("--clicks", type=int, default=20, help="clicks in all (in --rounds blocks)")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--seconds", type=float, default=10.0, help="CPU window per block")
    a = p.parse_args()
    tmp = os.environ.get("TMPDIR", "/tmp") + "/evc-libcamera"
    os.makedirs(tmp, exist_ok=True)
    random.seed(17)
    if not os.path.exists("/sys/bus/platform/devices/vimc.0"):
        log("libcamera.py: vimc is not loaded (no /sys/bus/platform/devices/vimc.0)")
        sys.exit(1)
    listed = subprocess.run(["cam", "-l"], capture_output=True, text=True, timeout=60)
    if CAMERA not in listed.stdout:
        log(f"libcamera.py: cam -l does not list {CAMERA!r}:\n{listed.stdout}{listed.stderr}")
        sys.exit(1)
    # the pixel format evcapture's stream takes (docs/libcamera.md: MJPEG, else YUYV, else 24-bit
    # RGB, RGB888 first), found as cam finds it: the first of them it configures without adjusting
    pixelformat = None
    for candidate in ("MJPEG", "YUYV", "RGB888", "BGR888"):
        tried = subprocess.run(["cam", "-c", CAMERA, "-I", "-s", f"width={WIDTH},height={HEIGHT},pixelformat={candidate}",
                                "--strict-formats"], capture_output=True, text=True, timeout=60)
        if tried.returncode == 0:
            pixelformat = candidate
            break
    if not pixelformat:
        log(f"libcamera.py: cam configures none of MJPEG, YUYV, RGB888, BGR888 at {WIDTH}x{HEIGHT}")
        sys.exit(1)
    keys = Keys(a.flood)
    trace = DequeueTrace()
    log(f"libcamera camera {CAMERA!r} at {WIDTH}x{HEIGHT}; keys {keys.node}; tmp {tmp}")
    ev = {"cpu": [], "wall": [], "frames": [], "lag": [], "nearest": [], "local": [], "click-gaps": [], "clicks": 0, "failed": 0,
          "errors": 0}
    cam = {"cpu": [], "wall": [], "frames": [], "failed": 0}
    per_block = max(1, a.clicks // a.rounds)
    block = 0
    for rnd in range(a.rounds):
        order = ("evcapture", "cam") if rnd % 2 == 0 else ("cam", "evcapture")
        for c in order:
            block += 1
            t = time.monotonic()
            if c == "evcapture":
                evcapture_block(a, keys, trace, tmp, f"b{block}", per_block, ev)
            else:
                cam_block(a, trace, tmp, f"b{block}", pixelformat, cam)
            log(f"round {rnd}: {c} block done in {time.monotonic() - t:.0f} s")
    trace.close()
    keys.close()

    failed = bool(ev["failed"] or cam["failed"])
    log(f"camera format {pixelformat} {WIDTH}x{HEIGHT} for both; evcapture's ring {ev.get('format', '?')}; "
        f"cam: {cam.get('configuration', '?')}")
    iv = None
    if ev["click-gaps"]:
        iv = statistics.mean(ev["click-gaps"])
        log(f"figure libcamera frame-interval: vimc {WIDTH}x{HEIGHT} mean {iv * 1000:.2f} ms ({1 / iv:.1f} fps), "
            f"median {statistics.median(ev['click-gaps']) * 1000:.2f} ms, max {max(ev['click-gaps']) * 1000:.2f} ms, "
            f"{len(ev['click-gaps'])} gaps while clicked")
    else:
        failed = True
    if ev["lag"] and iv:
        absl = [abs(x) for x in ev["lag"]]
        med, p90, mx, _ = quantiles(absl)
        log(f"figure libcamera shutter-lag: |frame_time - began| n={len(absl)} median {med * 1000:.1f} p90 {p90 * 1000:.1f} "
            f"max {mx * 1000:.1f} ms = max {mx / iv:.2f} (median {med / iv:.2f}) frame intervals of {iv * 1000:.2f} ms; "
            f"nearest frame {sum(ev['nearest'])} of {len(ev['nearest'])}; failed {ev['failed']} of {ev['clicks']} clicks; "
            f"error lines {ev['errors']}; of the gap around the press max "
            f"{(max(ev['local']) if ev['local'] else float('nan')):.2f} of {len(ev['local'])} clicks")
        if ev["local"]:
            log(f"  |lag| in units of the gap between the two frames around each press: max {max(ev['local']):.2f} "
                f"(median {statistics.median(ev['local']):.2f}) of {len(ev['local'])} clicks")
        log(f"  signed lag (frame_time - began) ms: {', '.join(f'{x * 1000:.1f}' for x in ev['lag'])}")
    else:
        failed = True

    def per_second(r):
        return [c / w for c, w in zip(r["cpu"], r["wall"])]

    def fps(r):
        return [n / w for n, w in zip(r["frames"], r["wall"])]

    if ev["cpu"] and cam["cpu"]:
        e_cpu, c_cpu = statistics.mean(per_second(ev)), statistics.mean(per_second(cam))
        e_fps, c_fps = statistics.mean(fps(ev)), statistics.mean(fps(cam))
        log(f"figure libcamera stream-cpu: evcapture {e_cpu * 1000:.1f} ms/s at {e_fps:.1f} fps, "
            f"cam {c_cpu * 1000:.1f} ms/s at {c_fps:.1f} fps, ratio {e_cpu / c_cpu:.2f}; "
            f"{len(ev['cpu'])} and {len(cam['cpu'])} blocks of {a.seconds:.0f} s")
        if e_fps and c_fps:
            log(f"  CPU per frame: evcapture {e_cpu / e_fps * 1000:.2f} ms, cam {c_cpu / c_fps * 1000:.2f} ms")
        log("  per block, evcapture ms/s@fps: " + ", ".join(f"{c * 1000:.0f}@{f:.1f}" for c, f in zip(per_second(ev), fps(ev))))
        log("  per block, cam ms/s@fps: " + ", ".join(f"{c * 1000:.0f}@{f:.1f}" for c, f in zip(per_second(cam), fps(cam))))
    else:
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
