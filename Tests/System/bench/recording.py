#!/usr/bin/env python3
"""Input latency and dropped frames while a video records (BENCHMARKS.md: "recording: ..."),
or while WebRTC viewers watch (`--load webrtc`, BENCHMARKS.md "WebRTC against MJPEG...").

Run in the test VM by Tests/System/bench/guest.sh (EVC_BENCH_ONLY=recording, or as part of
every run). One `evcapture run --json`: vivid as the capture camera (YUYV, the size and rate
below, stream = "always", MP4 with libx264), the fake UVC camera for the controls (zoom on
the knob), input from uinput-flood: a key device and a dial (one process), and a second key
device (another process) whose long press records.

Blocks alternate in the same boot and the same daemon, "idle" (the ring running, nothing
recorded) and "recording" (the second key held for the block: one video), each with pairs of:
  press  a 100 ms click on the first key device (click = "none"): CLOCK_MONOTONIC just before
         the key-down write → the daemon's `capture` `began` line read from its stdout
  knob   one REL_DIAL detent → the fake camera's `SET_CUR zoom_absolute` line read from its
         stdout: the USB control transfer of the daemon's VIDIOC_S_EXT_CTRLS
and from each recording's `video` line the frames written and those skipped (overwritten in
the ring before the encoder took them).

With `--load webrtc` the busy blocks are "webrtc" instead: the daemon also has the live view
(`[http]` on 127.0.0.1, WebRTC on), and for each such block headless Chromium (one browser,
started once, on a page of the daemon's origin) opens `--viewers` RTCPeerConnections, each a
WHEP session of its own (POST /api/whep, receive-only H.264), waits until each has received
frames, measures the block, then ends them (DELETE, close). The viewers share the daemon's one
encode of vivid's frames; they run in the same guest, on its one emulated CPU (a real rig's
viewers are other machines).

Usage: recording.py EVCAPTURE UINPUT_FLOOD [--rounds N] [--block S] [--width W] [--height H] [--fps F]
                    [--load recording|webrtc] [--viewers N] [--chromium PATH]
Prints latency lines (`NAME: n=… p50=…us p90=…us p99=…us`) and "figure recording-…" lines
(with each p99 ratio, recording against idle, a 90 % bootstrap interval: with a few hundred
presses per kind the p99 is the third to fifth slowest, and the interval says how much of a
difference is noise);
exits 1 if something could not be measured.
"""
import argparse
import os
import random
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import video_node, wait_for  # noqa: E402
from shutter import Daemon  # noqa: E402
from vivid import vivid_node  # noqa: E402


def log(*a):
    print(*a, flush=True)


class Lines:
    """A child's stdout lines, each kept with its arrival time (CLOCK_MONOTONIC)."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = []
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            t = time.monotonic()
            with self.changed:
                self.lines.append((t, raw.rstrip("\n")))
                self.changed.notify_all()

    def wait(self, start, match, timeout):
        """The first (arrival, line) from index start on that matches, or None."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for t, line in self.lines[start:]:
                    if match(line):
                        return t, line
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.changed.wait(left)


class Flood:
    """uinput-flood DEVICES: nodes, then commands answered by one line each."""

    def __init__(self, exe, devices):
        self.proc = subprocess.Popen([exe, str(devices)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.nodes = []
        while True:
            line = self.proc.stdout.readline()
            if not line or line.strip() == "ready":
                break
            self.nodes.append(line.split()[1])

    def send(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def answer(self):
        return float(self.proc.stdout.readline().split()[1])

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(10)


def quantile(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def p99_ratio(busy, idle, draws=2000):
    """recording p99 / idle p99, and a 90 % bootstrap interval of it (both sample sets
    redrawn with replacement): how far apart two runs of the same build may land."""
    rnd = random.Random(1)
    ratios = []
    for _ in range(draws):
        b = [busy[rnd.randrange(len(busy))] for _ in busy]
        i = [idle[rnd.randrange(len(idle))] for _ in idle]
        ratios.append(quantile(b, 0.99) / quantile(i, 0.99))
    ratios.sort()
    return quantile(busy, 0.99) / quantile(idle, 0.99), ratios[int(0.05 * draws)], ratios[int(0.95 * draws)]


def report(name, xs):
    us = [x * 1e6 for x in xs]
    log(f"{name}: n={len(us)} p50={quantile(us, 0.5):.0f}us p90={quantile(us, 0.9):.0f}us p99={quantile(us, 0.99):.0f}us"
        f" max={max(us):.0f}us")


# The viewers' script, in a page of the daemon's origin: N receive-only peer connections,
# each answered over WHEP (the page's own WebRTC, without its <video>).
OPEN_VIEWERS = """(async (n) => {
  window.viewers = [];
  for (let i = 0; i < n; i++) {
    const pc = new RTCPeerConnection();
    pc.addTransceiver('video', {direction: 'recvonly'});
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise(r => {
      if (pc.iceGatheringState === 'complete') return r();
      pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === 'complete') r(); };
      setTimeout(r, 5000);
    });
    const res = await fetch('/api/whep', {method: 'POST', headers: {'Content-Type': 'application/sdp'},
                                          body: pc.localDescription.sdp});
    if (res.status !== 201) throw new Error('WHEP ' + res.status + ': ' + await res.text());
    pc.whep = res.headers.get('Location');
    await pc.setRemoteDescription({type: 'answer', sdp: await res.text()});
    window.viewers.push(pc);
  }
  return window.viewers.length;
})(%d)"""
VIEWER_STATS = """(async () => {
  const out = [];
  for (const pc of window.viewers || []) {
    let s = {};
    (await pc.getStats()).forEach(r => { if (r.type === 'inbound-rtp' && r.kind === 'video') s = r; });
    out.push({received: s.framesReceived || 0, decoded: s.framesDecoded || 0, bytes: s.bytesReceived || 0,
              state: pc.connectionState});
  }
  return out;
})()"""
CLOSE_VIEWERS = """(async () => {
  for (const pc of window.viewers || []) {
    try { await fetch(pc.whep, {method: 'DELETE'}); } catch (e) {}
    pc.close();
  }
  window.viewers = [];
  return true;
})()"""


class WebRTCViewers:
    """N WebRTC viewers of the daemon's live view in one headless Chromium, opened for a block
    and closed after it; what each received per block, for the report."""

    def __init__(self, chromium, port, count, tmp):
        from webrtc import Chromium  # noqa: E402 (the bench's DevTools-pipe driver)
        if not os.access(chromium, os.X_OK):
            raise SystemExit(f"recording.py: no chromium at {chromium}")
        self.count = count
        self.browser = Chromium(chromium, f"{tmp}/chromium")
        self.session = self.browser.page()
        # A page of the daemon's origin (its 404 page: nothing of the live view's own runs).
        self.browser.call("Page.navigate", {"url": f"http://127.0.0.1:{port}/bench-viewers"}, self.session)
        time.sleep(5)
        self.blocks, self.failed = [], 0
        self.started = None

    def start(self):
        t0 = time.monotonic()
        try:
            n = self.browser.evaluate(self.session, OPEN_VIEWERS % self.count, timeout=180)
            deadline = time.monotonic() + 120
            while True:
                stats = self.browser.evaluate(self.session, VIEWER_STATS)
                if n == self.count and all(s["received"] > 0 for s in stats):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"viewers without frames after 120 s: {stats}")
                time.sleep(1)
            self.started = (time.monotonic(), stats)
            log(f"  {self.count} WebRTC viewers receiving after {time.monotonic() - t0:.1f} s")
        except RuntimeError as e:
            log(f"  the WebRTC viewers did not start: {e}")
            self.failed += 1
            self.started = None

    def stop(self):
        if self.started:
            t0, before = self.started
            after = self.browser.evaluate(self.session, VIEWER_STATS)
            took = time.monotonic() - t0
            per = [((b["received"] - a["received"]) / took, (b["decoded"] - a["decoded"]) / took,
                    (b["bytes"] - a["bytes"]) / took, b["state"]) for a, b in zip(before, after)]
            self.blocks.append(per)
            log("  viewers: " + "; ".join(f"{r:.1f} frames/s received, {dcd:.1f} decoded, {by / 1000:.1f} kB/s, {st}"
                                          for r, dcd, by, st in per))
            if any(r <= 0 for r, _, _, _ in per):
                self.failed += 1
        self.browser.evaluate(self.session, CLOSE_VIEWERS, timeout=60)
        time.sleep(2)  # the sessions ended, the encoder stopped after the last

    def report(self):
        rates = [r for block in self.blocks for r, _, _, _ in block]
        decoded = [dcd for block in self.blocks for _, dcd, _, _ in block]
        if not rates:
            return "no block measured"
        return (f"{len(self.blocks)} blocks, frames received per viewer-second min {min(rates):.1f} "
                f"median {sorted(rates)[len(rates) // 2]:.1f}, decoded median {sorted(decoded)[len(decoded) // 2]:.1f}, "
                f"{self.failed} blocks failed")

    def close(self):
        self.browser.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("evcapture")
    p.add_argument("flood")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--block", type=float, default=20, help="seconds of measurement per block")
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--height", type=int, default=480)
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--load", choices=["recording", "webrtc"], default="recording")
    p.add_argument("--viewers", type=int, default=4, help="WebRTC viewers in a busy block (--load webrtc)")
    p.add_argument("--chromium", default="/usr/bin/chromium")
    p.add_argument("--port", type=int, default=18310)
    a = p.parse_args()
    busy_kind = a.load
    tmp = os.environ.get("TMPDIR", "/tmp") + f"/evc-bench-{a.load}"
    os.makedirs(tmp + "/out", exist_ok=True)

    vivid = vivid_node()
    if not vivid:
        raise SystemExit("recording.py: no vivid")
    fake = subprocess.Popen([os.environ["EVCAPTURE_FAKEUVC"]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1)
    camera = Lines(fake)
    node = wait_for("the fake camera's node", lambda: video_node("evcapture fake camera"), 30)
    subprocess.run(["udevadm", "settle", "--timeout=10"])
    time.sleep(2)  # udev's own probes of the new camera done (GadgetFS drops overlapping requests)
    measured = Flood(a.flood, 2)  # keys 0 + the dial
    recorder = Flood(a.flood, 1)  # the recording key
    subprocess.run(["udevadm", "settle", "--timeout=10"])
    keys, dial, rec = measured.nodes[0], measured.nodes[1], recorder.nodes[0]
    log(f"vivid {vivid}, fake camera {node}; keys {keys}, dial {dial}, recording key {rec}")

    config = f"{tmp}/recording.toml"
    with open(config, "w") as f:
        f.write(f"""[camera]
device = "{node}"
capture-device = "{vivid}"
width = {a.width}
height = {a.height}
fps = {a.fps}
stream = "always"
[capture]
hold-threshold = 0.3
[controls]
order = ["zoom"]
idle-timeout = 600
[handlers.primary]
click = "none"
long-press = "video"
[sound]
play = "off"
[output]
directory = "{tmp}/out"
video-format = "mp4"
""")
        if a.load == "webrtc":
            f.write(f"""[http]
listen = "127.0.0.1:{a.port}"
webrtc = true
preview-width = {a.width}
""")
    d = Daemon(a.evcapture, config, tmp, a.load)
    d.wait_ready()
    time.sleep(3)  # the ring running
    viewers = WebRTCViewers(a.chromium, a.port, a.viewers, tmp) if a.load == "webrtc" else None

    results = {"idle": {"press": [], "knob": []}, busy_kind: {"press": [], "knob": []}}
    videos, failures = [], 0
    seen = set()
    sign = 1

    def press_once(r):
        nonlocal failures
        measured.send("click 100000")
        down = measured.answer()
        began = d.wait_line(lambda o: o.get("event") == "capture" and o.get("phase") == "began" and o.get("node") == keys
                            and o.get("press") not in seen, 10)
        if not began:
            failures += 1
            log("  press: no began line")
            return
        seen.add(began[1]["press"])
        r["press"].append(began[0] - down)

    def knob_once(r):
        nonlocal failures, sign
        start = len(camera.lines)
        measured.send(f"turn {sign}")
        turned = measured.answer()
        got = camera.wait(start, lambda line: "SET_CUR zoom_absolute" in line, 10)
        if not got:
            failures += 1
            log("  knob: no SET_CUR")
            return
        sign = -sign
        r["knob"].append(got[0] - turned)

    def block(kind, seconds):
        r = results[kind]
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            press_once(r)
            time.sleep(random.uniform(0.1, 0.2))
            knob_once(r)
            time.sleep(random.uniform(0.1, 0.2))

    # The first detent after the start (it may only show the controls): left out.
    start = len(camera.lines)
    measured.send(f"turn {sign}")
    measured.answer()
    if camera.wait(start, lambda line: "SET_CUR zoom_absolute" in line, 10):
        sign = -sign
    for rnd in range(a.rounds):
        order = ["idle", busy_kind] if rnd % 2 == 0 else [busy_kind, "idle"]
        for kind in order:
            if kind == "idle":
                block("idle", a.block)
                continue
            if viewers:
                viewers.start()
                block(kind, a.block)
                viewers.stop()
                continue
            hold = a.block + 4
            mark = len(d.lines)
            recorder.send(f"click {int(hold * 1e6)}")
            started = d.wait_line(lambda o: o.get("event") == "capture" and o.get("phase") == "began" and o.get("node") == rec
                                  and o.get("press") not in seen, 10)
            if not started:
                raise SystemExit("recording.py: the recording key's press did not begin")
            press = started[1]["press"]
            seen.add(press)
            time.sleep(2)  # past the hold threshold, the encoder opened
            block("recording", a.block)
            recorder.answer()  # released
            video = d.wait_line(lambda o: o.get("event") == "action" and o.get("action") == "video" and o.get("press") == press,
                                120)
            if not video:
                raise SystemExit(f"recording.py: no video line for press {press}: {[o for _, o in d.lines[mark:]]}")
            v = video[1]
            videos.append(v)
            log(f"round {rnd}: video {v.get('frames')} frames, {v.get('skipped')} skipped, {v.get('duration')} s")
        log(f"round {rnd}: idle {len(results['idle']['press'])} presses so far, {busy_kind} {len(results[busy_kind]['press'])}")

    if viewers:
        viewers.close()
    status = d.stop()
    measured.close()
    recorder.close()
    fake.terminate()
    fake.wait(10)
    for kind in ("idle", busy_kind):
        if results[kind]["press"]:
            report(f"{kind} press → began line", results[kind]["press"])
        if results[kind]["knob"]:
            report(f"{kind} knob step → SET_CUR at the camera", results[kind]["knob"])
    figure = "recording-p99" if a.load == "recording" else f"webrtc-viewers-p99 {a.viewers}"
    for what in ("press", "knob"):
        busy, idle = results[busy_kind][what], results["idle"][what]
        if busy and idle:
            r, lo, hi = p99_ratio(busy, idle)
            log(f"figure {figure} {what}: ratio={r:.2f} interval={lo:.2f}-{hi:.2f} n={len(busy)}/{len(idle)}")
    if viewers:
        log(f"figure webrtc-viewers {a.viewers}: {viewers.report()}")
        if failures or status != 0 or viewers.failed:
            log(f"recording.py: {failures} presses or steps unanswered, {viewers.failed} viewer blocks failed, "
                f"daemon exit status {status}")
            return 1
        return 0
    frames = sum(v.get("frames", 0) for v in videos)
    skipped = sum(v.get("skipped", 0) for v in videos)
    seconds = sum(v.get("duration", 0) for v in videos)
    rate = frames / seconds if seconds else 0
    camera_rate = (frames + skipped) / seconds if seconds else 0  # vivid gives at most 25 fps at 640x480
    log(f"figure recording-frames {a.width}x{a.height}@{a.fps}: {len(videos)} videos, {seconds:.1f} s, camera {camera_rate:.1f} fps, "
        f"{frames} frames written, {skipped} skipped ({100 * skipped / max(1, frames + skipped):.1f} %), {rate:.1f} fps in the files")
    if failures or status != 0 or not videos:
        log(f"recording.py: {failures} presses or steps unanswered, daemon exit status {status}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
