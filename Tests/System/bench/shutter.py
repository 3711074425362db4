#!/usr/bin/env python3
"""Shutter lag, the ring's cost, idle with the stream configured (BENCHMARKS.md: "shutter
lag", "press to photo", "ring cost", "idle with a stream").

Run in the test VM by Tests/System/bench/guest.sh (EVC_BENCH_ONLY=shutter, or as part of
every run). vivid (640x480 YUYV) is the capture camera; a uinput gpio-keys-like device
(uinput-flood 1) presses KEY_VOLUMEDOWN for ~100 ms per click.

  interval  vivid's real frame interval in this boot: v4l2-ctl streams 60 frames and the
            driver's timestamps are differenced (once per round, so its drift is seen)
  shutter   rounds of blocks, one block per contender, in rotating order (emulated
            timings drift within a boot): evcapture with [camera] stream =
            "on-press" (prepared at began; idle-stop 0.5 s and
            clicks >= 1.3 s apart, so every click starts it), "always" (the running ring),
            "always" with vivid set to 25 fps (its fastest at 640x480; the others run at its
            default 5 fps, which neither evcapture nor fswebcam changes), and triggerhappy
            (thd) running fswebcam on the key. Per click: shutter lag =
            the photo's frame_time - the press's began time (evcapture), press -> photo on
            disk = the file's ctime (evcapture's rename, fswebcam's last write; mtime beside
            it) - CLOCK_MONOTONIC before the key-down write, and for evcapture press -> the
            action line read from its stdout
  cost      RSS and CPU (utime+stime over 10 s) of the daemon with the ring running
            (stream = "always") and with the stream off (stream = "on-press", no press),
            at 640x480 and 1280x720, blocks interleaved
  idle      stream = "always" with no photo/video action (click = long-press = "none"):
            context switches of every thread over 10 s, and whether a stream thread exists;
            then [session] mode = "launch" (photo actions, stream = "always", the key as
            launch button, idle-stop 2 s): the same over 10 s before any launch, and again
            after a launch press started the session and it idle-stopped

With --baseline EVCAPTURE2 a sixth contender, "baseline:always": another build (say, main's
before a change) in the same boot.

Usage: shutter.py EVCAPTURE UINPUT_FLOOD [--clicks N] [--rounds N] [--baseline EVCAPTURE2]
Prints "figure shutter ..." lines; exits 1 if something could not be measured.
"""
import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import NotifiedDaemon, cpu_seconds, status_kb, threads  # noqa: E402
from vivid import measure_interval, measure_interval_at, parse_fps, set_rate, vivid_node  # noqa: E402


def log(*a):
    print(*a, flush=True)


def realtime_minus_monotonic():
    """CLOCK_REALTIME - CLOCK_MONOTONIC, from the tightest of a few readings."""
    best = None
    for _ in range(20):
        m0 = time.clock_gettime(time.CLOCK_MONOTONIC)
        r = time.clock_gettime(time.CLOCK_REALTIME)
        m1 = time.clock_gettime(time.CLOCK_MONOTONIC)
        if best is None or m1 - m0 < best[0]:
            best = (m1 - m0, r - (m0 + m1) / 2)
    return best[1]


def quantiles(xs):
    """(median, p90, max, min) of xs."""
    s = sorted(xs)
    p90 = s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))]
    return statistics.median(s), p90, s[-1], s[0]


def fmt_ms(xs):
    if not xs:
        return "no samples"
    med, p90, mx, mn = quantiles([x * 1000 for x in xs])
    return f"n={len(xs)} median={med:.1f} p90={p90:.1f} max={mx:.1f} min={mn:.1f} ms"


class Keys:
    """uinput-flood 1: one gpio-keys-like device; click() holds KEY_VOLUMEDOWN."""

    def __init__(self, flood):
        self.proc = subprocess.Popen([flood, "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.node = None
        while True:
            line = self.proc.stdout.readline()
            if not line or line.strip() == "ready":
                break
            self.node = line.split()[1]
        subprocess.run(["udevadm", "settle", "--timeout=10"])

    def click(self, hold_us=100_000):
        """Presses for hold_us; returns CLOCK_MONOTONIC just before the key-down write."""
        self.proc.stdin.write(f"click {hold_us}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline().split()[1])

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(10)


class Daemon(NotifiedDaemon):
    """Every stdout line is parsed and kept with its arrival time."""

    def __init__(self, exe, config, tmp, name):
        self.lines = []  # (arrival monotonic, dict)
        super().__init__(exe, config, tmp, name, "info")

    def _read(self):
        for raw in self.proc.stdout:
            t = time.monotonic()
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            with self.changed:
                self.lines.append((t, obj))
                self.changed.notify_all()

    def wait_line(self, match, timeout):
        """The first (arrival, line) for which match(line) holds, or None after timeout."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for t, obj in self.lines:
                    if match(obj):
                        return t, obj
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.changed.wait(left)

    def stream_starts(self):
        return open(self.err_path).read().count("capture stream started")


def write_config(path, node, out, stream, width=640, height=480, photos=True, idle_stop=None, launch_idle=None):
    with open(path, "w") as f:
        f.write(f"""[camera]
device = "none"
capture-device = "{node}"
width = {width}
height = {height}
stream = "{stream}"
""" + (f"idle-stop = {idle_stop}\n" if idle_stop else "") + f"""[handlers.primary]
click = "{'photo' if photos else 'none'}"
long-press = "none"
[sound]
play = "off"
[output]
directory = "{out}"
""" + (f"""[session]
mode = "launch"
launch-button = "KEY_VOLUMEDOWN"
idle-stop = {launch_idle}
""" if launch_idle else ""))


def evcapture_block(a, keys, node, contender, clicks, tmp, block, results, rt_off):
    out = f"{tmp}/out-{block}"
    os.makedirs(out, exist_ok=True)
    # "baseline:MODE": another build (--baseline, e.g. before a change) in the same boot
    exe = a.baseline if contender.startswith("baseline:") else a.evcapture
    mode, _, fast = contender.removeprefix("baseline:").partition("@")
    config = f"{tmp}/shutter-{mode}.toml"
    write_config(config, node, out, mode, idle_stop=0.5 if mode == "on-press" else None)
    if fast:
        set_rate(node, int(fast.removesuffix("fps")))
    d = Daemon(exe, config, tmp, block)
    d.wait_ready()
    time.sleep(3)  # session started; in "always" mode the ring is running
    r = results[contender]
    seen = set()
    for i in range(clicks):
        down = keys.click(100_000)
        began = d.wait_line(lambda o: o.get("event") == "capture" and o.get("phase") == "began"
                            and o.get("press") not in seen, 10)
        if not began:
            log(f"  {mode}: click {i}: no began line")
            r["failed"] += 1
            continue
        press = began[1]["press"]
        seen.add(press)
        photo = d.wait_line(lambda o: o.get("press") == press and o.get("event") in ("action", "error")
                            and o.get("action", "photo") == "photo", 15)
        if not photo or photo[1].get("event") != "action":
            log(f"  {mode}: click {i}: no photo ({photo[1] if photo else 'timed out'})")
            r["failed"] += 1
            continue
        t_began = began[1]["time"]
        arrival, line = photo
        r["lag"].append(line["frame_time"] - t_began)
        r["line"].append(arrival - down)
        st = os.stat(line["file"])  # the ctime is the rename: a photo prepared at began is written earlier
        r["disk"].append(st.st_ctime - rt_off - down)
        r["written"].append(st.st_mtime - rt_off - down)
        r["began-write"].append(t_began - down)
        # random phase against the camera's frames; >= 1.3 s so "on-press" idles out
        # (idle-stop 0.5 s, then the camera is closed) before the next click
        time.sleep(random.uniform(1.3, 1.8))
    starts = d.stream_starts()
    status = d.stop()
    if fast:
        set_rate(node, 5)  # vivid's default rate, for the other contenders
    r["starts"] += starts
    r["clicks"] += clicks
    if status != 0:
        log(f"  {mode}: daemon exit status {status}")


def thd_block(keys, node, clicks, tmp, block, results, rt_off, frame_s):
    out = f"{tmp}/out-{block}"
    os.makedirs(out, exist_ok=True)
    conf = f"{tmp}/thd-{block}.conf"
    with open(conf, "w") as f:
        # the usual recipe (one line in /etc/triggerhappy/triggers.d/), thd runs it with sh -c
        f.write(f"KEY_VOLUMEDOWN 1 fswebcam -q -d {node} -r 640x480 --no-banner {out}/photo-$(date +%s%N).jpg\n")
    thd = subprocess.Popen(["thd", "--triggers", conf, keys.node], stdout=open(f"{tmp}/thd-{block}.log", "w"),
                           stderr=subprocess.STDOUT)
    time.sleep(1)
    r = results["triggerhappy"]
    for i in range(clicks):
        before = set(os.listdir(out))
        down = keys.click(100_000)
        deadline = time.monotonic() + 20
        path = None
        while time.monotonic() < deadline and path is None:
            new = set(os.listdir(out)) - before
            if new:
                path = f"{out}/{new.pop()}"
            time.sleep(0.002)
        if path is None:
            log(f"  triggerhappy: click {i}: no photo within 20 s")
            r["failed"] += 1
            continue
        # fswebcam writes the file in place: wait until it stops changing (and fswebcam is gone)
        last = None
        while time.monotonic() < deadline:
            st = os.stat(path)
            busy = subprocess.run(["pgrep", "-x", "fswebcam"], capture_output=True).returncode == 0
            if not busy and st.st_size > 0 and (st.st_size, st.st_mtime_ns) == last:
                break
            last = (st.st_size, st.st_mtime_ns)
            time.sleep(0.05)
        st = os.stat(path)
        r["disk"].append(st.st_ctime - rt_off - down)
        r["written"].append(st.st_mtime - rt_off - down)
        time.sleep(random.uniform(1.3, 1.8))
    r["clicks"] += clicks
    thd.send_signal(signal.SIGTERM)
    thd.wait(10)


def cost_block(a, node, stream, width, height, tmp, block, costs):
    out = f"{tmp}/out-{block}"
    config = f"{tmp}/cost-{block}.toml"
    write_config(config, node, out, stream, width=width, height=height)
    d = Daemon(a.evcapture, config, tmp, block)
    d.wait_ready()
    time.sleep(6)  # the ring fills (2 s of frames) and its slots are touched
    pid = d.proc.pid
    rss = (status_kb(pid, "VmRSS"), status_kb(pid, "RssAnon"))
    c0, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(10)
    c1, t1 = cpu_seconds(pid), time.monotonic()
    rss2 = status_kb(pid, "VmRSS")
    names = sorted(n for n, _, _ in threads(pid).values())
    starts = d.stream_starts()
    d.stop()
    key = (stream, f"{width}x{height}")
    costs.setdefault(key, []).append((rss[0], rss[1], rss2, (c1 - c0) / (t1 - t0), starts, names))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("evcapture")
    p.add_argument("flood")
    p.add_argument("--clicks", type=int, default=20, help="clicks per contender (in --rounds blocks)")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--idle", type=float, default=10.0)
    p.add_argument("--baseline", help="another evcapture build: a sixth contender, baseline:always")
    a = p.parse_args()
    tmp = os.environ.get("TMPDIR", "/tmp") + "/evc-shutter"
    os.makedirs(tmp, exist_ok=True)
    random.seed(13)
    node = vivid_node()
    if not node:
        log("shutter.py: no vivid capture node (vivid-000-vid-cap)")
        sys.exit(1)
    keys = Keys(a.flood)
    rt_off = realtime_minus_monotonic()
    log(f"vivid {node} ({parse_fps(node)} fps nominal); keys {keys.node}; tmp {tmp}")
    for size in ("width=640,height=480", "width=1280,height=720"):
        r = subprocess.run(["v4l2-ctl", "-d", node, f"--list-frameintervals={size},pixelformat=YUYV"],
                           capture_output=True, text=True)
        log(f"vivid intervals {size}: " + " ".join(re.findall(r"\(([\d.]+ fps)\)", r.stdout)))

    contenders = ["on-press", "always", "always@25fps", "triggerhappy"] + (["baseline:always"] if a.baseline else [])
    results = {m: {"lag": [], "line": [], "disk": [], "written": [], "began-write": [], "failed": 0, "clicks": 0, "starts": 0}
               for m in contenders}
    intervals = []
    per_block = max(1, a.clicks // a.rounds)
    block = 0
    for rnd in range(a.rounds):
        iv = measure_interval(node, 640, 480)
        if iv:
            intervals.append(iv)
            log(f"round {rnd}: vivid 640x480 interval mean {iv[0] * 1000:.2f} ms, median {iv[2] * 1000:.2f}, max {iv[1] * 1000:.2f}")
        order = contenders[rnd % len(contenders):] + contenders[:rnd % len(contenders)]
        for c in order:
            block += 1
            t = time.monotonic()
            if c == "triggerhappy":
                thd_block(keys, node, per_block, tmp, f"b{block}", results, rt_off, None)
            else:
                evcapture_block(a, keys, node, c, per_block, tmp, f"b{block}", results, rt_off)
            log(f"round {rnd}: {c} block done in {time.monotonic() - t:.0f} s")

    failed = False
    if intervals:
        mean = statistics.mean(i[0] for i in intervals)
        log(f"figure shutter vivid-interval: 640x480 mean {mean * 1000:.2f} ms ({1 / mean:.2f} fps), "
            f"per round mean {', '.join(f'{i[0] * 1000:.2f}' for i in intervals)} ms, max {max(i[1] for i in intervals) * 1000:.2f} ms")
    else:
        mean = None
        failed = True
    for m in contenders:
        r = results[m]
        if r["failed"]:
            failed = True
        if m != "triggerhappy":
            log(f"figure shutter {m} lag (frame_time - began): {fmt_ms(r['lag'])}")
            if r["lag"]:
                absmax = max(abs(x) for x in r["lag"])
                log(f"  |lag| max {absmax * 1000:.1f} ms"
                    + (f" = {absmax / mean:.2f} frame intervals (goal <= 0.5 with the ring)" if mean else ""))
            log(f"figure shutter {m} press -> action line: {fmt_ms(r['line'])}")
            log(f"  stream starts {r['starts']} for {r['clicks']} clicks; began - key-down write: {fmt_ms(r['began-write'])}")
            if r["lag"] and m == "always@25fps":
                iv = measure_interval_at(node, 25)
                if iv:
                    log(f"  vivid 640x480 at 25 fps: interval mean {iv[0] * 1000:.2f} ms; |lag| max = {max(abs(x) for x in r['lag']) / iv[0]:.2f} of it")
        log(f"figure shutter {m} press -> photo on disk under its final name (ctime): {fmt_ms(r['disk'])}; failed {r['failed']}")
        log(f"  press -> its bytes written (mtime): {fmt_ms(r['written'])}")
    thd = results["triggerhappy"]["disk"]
    for m in ("always", "always@25fps", "baseline:always"):
        ring = results.get(m, {}).get("disk")
        if thd and ring:
            log(f"figure shutter ratio: triggerhappy / {m}, press -> photo on disk, medians: "
                f"{statistics.median(thd) / statistics.median(ring):.1f}x (goal >= 5x)")

    # the ring's cost: memory and CPU, ring running vs stream off, two frame sizes, interleaved
    costs = {}
    for rnd in range(2):
        for width, height in ((640, 480), (1280, 720)):
            for stream in (("always", "on-press") if rnd % 2 == 0 else ("on-press", "always")):
                block += 1
                cost_block(a, node, stream, width, height, tmp, f"b{block}", costs)
    for (stream, size), runs in sorted(costs.items()):
        label = "ring running (always)" if stream == "always" else "stream off (on-press, no press)"
        log(f"figure shutter cost {size} {label}: " + "; ".join(
            f"VmRSS {r0} kB (anon {an}) then {r2} kB, CPU {cpu * 1000:.1f} ms/s, stream starts {st}, threads {len(n)}"
            for r0, an, r2, cpu, st, n in runs))
    iv720 = measure_interval(node, 1280, 720)
    if iv720:
        log(f"figure shutter vivid-interval: 1280x720 mean {iv720[0] * 1000:.2f} ms ({1 / iv720[0]:.2f} fps)")

    def idle_wakeups(d, label):
        """Context switches of every thread of d over a.idle seconds; logs a figure line."""
        pid = d.proc.pid
        before = threads(pid)
        time.sleep(a.idle)
        after = threads(pid)
        woke = [f"{tid} {n}: voluntary {before[tid][1]}→{v}, involuntary {before[tid][2]}→{nv}"
                for tid, (n, v, nv) in sorted(after.items()) if tid not in before or (v, nv) != before[tid][1:]]
        names = sorted(n for n, _, _ in after.values())
        log(f"figure shutter idle-wakeups ({label}): threads={len(after)} "
            f"seconds={a.idle:.0f} threads-woken={len(woke)} stream-starts={d.stream_starts()} threads: {', '.join(names)}")
        for w in woke:
            log(f"  {w}")
        return not woke

    # idle: the stream configured "always" but no photo/video action: nothing may stream or wake
    config = f"{tmp}/idle.toml"
    write_config(config, node, f"{tmp}/out-idle", "always", photos=False)
    d = Daemon(a.evcapture, config, tmp, "idle")
    d.wait_ready()
    time.sleep(8)
    if not idle_wakeups(d, 'stream = "always", click = long-press = "none"'):
        failed = True
    d.stop()

    # idle with the session stopped: launch mode, before a launch and after an idle stop
    config = f"{tmp}/idle-launch.toml"
    write_config(config, node, f"{tmp}/out-idle-launch", "always", launch_idle=2)
    d = Daemon(a.evcapture, config, tmp, "idle-launch")
    d.wait_ready()
    time.sleep(8)
    if not idle_wakeups(d, 'launch mode, session not yet launched, stream = "always"') or d.stream_starts():
        failed = True
    keys.click()
    started = d.wait_line(lambda o: o.get("event") == "session" and o.get("reason") == "launch", 10)
    stopped = d.wait_line(lambda o: o.get("event") == "session" and o.get("reason") == "idle", 15)
    gap = f" {stopped[1]['time'] - started[1]['time']:.2f} s after the start" if started and stopped else ""
    log(f"figure shutter launch: session started by the launch key {bool(started)}, idle-stopped {bool(stopped)}{gap}, "
        f"stream starts {d.stream_starts()}")
    if not (started and stopped):
        failed = True
    else:
        time.sleep(3)
        stream_off = "capture stream stopped" in open(d.err_path).read()
        if not idle_wakeups(d, f'launch mode, after a launch and an idle stop (stream stopped: {stream_off})') or not stream_off:
            failed = True
    d.stop()
    keys.close()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
