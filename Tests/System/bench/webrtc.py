#!/usr/bin/env python3
"""The live view's WebRTC against its MJPEG of the same frames, in one boot, alternating
blocks: vivid (YUYV) at 5 fps (the VM has one emulated CPU: the encode and Chromium's decode
share it), at 640×480 and 1280×720, one daemon per size with `[http] webrtc = true` and
`preview-width` the camera's width (the MJPEG parts are the whole frame, as the H.264 is).

A block is one viewer for the block's seconds, the two kinds in alternating order:
  mjpeg   a socket reads GET /stream.mjpg; every byte read (part headers and JPEGs, the HTTP
          head excluded) counts, divided by the block's seconds; the parts counted
  webrtc  headless Chromium (driven through its DevTools pipe, descriptors 3 and 4) opens the
          page, which plays over WHEP; once the page says `webrtc` and 3 s have passed, the
          page's RTCPeerConnection (window.peer) getStats() inbound-rtp video is read at the
          block's start and end: bytesReceived + headerBytesReceived (RTP payload and RTP
          headers; no SRTP tag, UDP or IP, as the MJPEG figure has no TCP or IP) per second,
          and framesDecoded; and the browser's own delays over the block, reported without a
          threshold: jitterBufferDelay / jitterBufferEmittedCount, totalProcessingDelay /
          framesDecoded (receive of a frame's first packet -> decoded), totalDecodeTime /
          framesDecoded. Then the page goes to about:blank (it ends its session).
          Over the same seconds, frame kernel time → RTP packet sent: every packet on the
          guest's loopback is read from an AF_PACKET socket (outgoing, the kernel's receive
          timestamp, CLOCK_REALTIME taken to CLOCK_MONOTONIC by their offset at the start);
          the video's RTP packets (header in clear under SRTP: version 2, a dynamic payload
          type, the SSRC with the most packets) are grouped into frames by RTP timestamp. The
          daemon stamps each frame with its capture time, so the RTP timestamps differ as the
          capture times do (vivid's timestamps set to "Start of Exposure", in the past when
          the daemon dequeues a frame, as a webcam's; its default "End of Frame" stamps lie
          ahead, and the daemon sends such a frame at once, stamped with the moment); the capture times themselves are the buffer timestamps of the
          kernel's v4l2:v4l2_dqbuf events of the daemon's threads (a tracing instance, trace
          clock mono). The one offset that puts (nearly) every frame's RTP timestamp on a
          dequeued buffer's timestamp (within 0.2 ms) ties the two; then for each frame, its
          first and its last packet (the marker) − its capture time. Threshold: the last
          packet's p99 ≤ one frame interval (1/5 s).

Usage: webrtc.py EVCAPTURE [--rounds N] [--block S] [--sizes 640x480,1280x720] [--port P]
Prints "figure webrtc-bandwidth WxH: ...", "figure webrtc-delay WxH: ..." and "figure
webrtc-rtp WxH: ..." lines; exits 1 if something could not be measured.
"""
import argparse
import bisect
import json
import os
import select
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from statistics import median

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from libcamera import DequeueTrace  # noqa: E402
from shutter import Daemon  # noqa: E402
from ustreamer import wait_port  # noqa: E402
from vivid import set_rate, vivid_node  # noqa: E402

FPS = 5


def log(*a):
    print(*a, flush=True)


class Chromium:
    """Headless Chromium with --remote-debugging-pipe: it reads NUL-terminated JSON commands
    on descriptor 3 and writes NUL-terminated JSON messages on descriptor 4."""

    def __init__(self, exe, directory):
        os.makedirs(directory, exist_ok=True)
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()

        def descriptors():  # (Python's own descriptors are close-on-exec; dup2's copies are not)
            # (copies first: a pipe's own number can be 3 or 4, and dup2 onto itself would
            # leave it close-on-exec)
            r, w = os.dup(to_r), os.dup(from_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        argv = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--mute-audio", "--autoplay-policy=no-user-gesture-required", f"--user-data-dir={directory}/profile",
                "--remote-debugging-pipe", "--allow-loopback-in-peer-connection", "about:blank"]
        self.proc = subprocess.Popen(argv, preexec_fn=descriptors, close_fds=False, env=dict(os.environ, HOME=directory),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=open(f"{directory}/chromium.log", "w"))
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.next_id = 0

    def call(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        mine = self.next_id
        msg = {"id": mine, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == mine:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_r], [], [], left)[0]:
                raise RuntimeError(f"{method}: no answer in {timeout} s")
            data = os.read(self.from_r, 1 << 20)
            if not data:
                raise RuntimeError(f"{method}: the browser closed its pipe")
            self.buf += data

    def page(self):
        """A session on the browser's first page."""
        deadline = time.monotonic() + 90
        while True:
            try:
                pages = [t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page"]
                if pages:
                    return self.call("Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True})["sessionId"]
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise RuntimeError("the browser has no page")
            time.sleep(1)

    def evaluate(self, session, expression, timeout=30):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                      session, timeout)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:60]}: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_w)
        os.close(self.from_r)


STATS = """(async () => {
  if (!window.peer) return null;
  const out = {};
  (await window.peer.getStats()).forEach(r => { if (r.type === 'inbound-rtp' && r.kind === 'video') Object.assign(out, r); });
  return out;
})()"""
TRANSPORT = "(document.getElementById('view') || {dataset: {}}).dataset.transport || ''"


SO_TIMESTAMPNS = 35
PACKET_OUTGOING = 4


class RTPProbe:
    """The RTP packets sent on loopback and the buffers the daemon dequeued, over a window."""

    def __init__(self, daemon_pid):
        self.pid = daemon_pid
        self.trace = DequeueTrace()
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
        self.sock.bind(("lo", 0))
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.settimeout(0.2)
        self.packets = []  # (monotonic s, ssrc, rtp timestamp, marker, payload type)
        self.running = False

    def start(self):
        self.offset = time.clock_gettime(time.CLOCK_REALTIME) - time.clock_gettime(time.CLOCK_MONOTONIC)
        self.started = time.monotonic()
        self.packets = []
        self.trace.clear()
        self.running = True
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while self.running:
            try:
                data, anc, _, address = self.sock.recvmsg(65536, 64)
            except socket.timeout:
                continue
            if address[2] != PACKET_OUTGOING or len(data) < 14 + 20 + 8 + 12 or data[14] >> 4 != 4 or data[23] != 17:
                continue
            at = None
            for level, kind, raw in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, ns = struct.unpack("qq", raw[:16])
                    at = sec + ns / 1e9 - self.offset
            rtp = data[14 + (data[14] & 15) * 4 + 8:]
            if at is None or len(rtp) < 12 or rtp[0] >> 6 != 2 or not 96 <= rtp[1] & 0x7F <= 127:
                continue
            if at < self.started:
                continue  # waiting in the socket since the last window (another session's)
            ts, ssrc = struct.unpack(">II", rtp[4:12])
            self.packets.append((at, ssrc, ts, rtp[1] >> 7, rtp[1] & 0x7F))

    def stop(self):
        """{"first": [s], "last": [s], "frames": n, "matched": n, "candidates": n} for the window."""
        self.running = False
        self.thread.join()
        tids = {int(t) for t in os.listdir(f"/proc/{self.pid}/task")}
        events = self.trace.events(tids)
        captures = sorted(ts for _, ts, _ in events)
        result = frame_delays(self.packets, captures, {ts: at for at, ts, _ in events})
        if result["matched"] < result["frames"] or not result["frames"]:
            log(f"  rtp probe: {len(self.packets)} RTP packets, {len(events)} dequeues by {len(tids)} threads")
        return result

    def close(self):
        self.sock.close()
        self.trace.close()


def frame_delays(packets, captures, dequeued=None, tolerance=0.0002):
    """Each frame's first and last packet − its capture time, and its last packet − the
    moment the daemon dequeued it (`dequeued`: capture time → dequeue time) (see the
    module's text)."""
    none = {"first": [], "last": [], "from-dequeue": [], "ahead": [], "frames": 0, "matched": 0, "candidates": 0}
    if not packets or not captures:
        return none
    counts = {}
    for _, ssrc, _, _, pt in packets:
        counts[(ssrc, pt)] = counts.get((ssrc, pt), 0) + 1
    media = max(counts, key=counts.get)
    frames = {}  # rtp timestamp → [first, last]
    ts0 = None
    for at, ssrc, ts, marker, pt in packets:
        if (ssrc, pt) != media:
            continue
        ts0 = ts if ts0 is None else ts0
        d = (ts - ts0) & 0xFFFFFFFF
        d = d - (1 << 32) if d >= 1 << 31 else d
        f = frames.setdefault(d, [at, at])
        f[0], f[1] = min(f[0], at), max(f[1], at)
    def nearest(t):
        i = bisect.bisect_left(captures, t)
        return min((captures[j] for j in (i - 1, i) if 0 <= j < len(captures)), key=lambda c: abs(c - t))

    def near(t):
        return abs(nearest(t) - t)

    keys = sorted(frames)
    # Candidates: each dequeued buffer as the capture of the frame with the lowest RTP
    # timestamp that was captured within the trace (frames sent early in the window may
    # have been captured before it); a frame is sent at most 1 s before its timestamp (a
    # driver may stamp a frame's end ahead of handing it over: vivid does).
    best, best_n, ties = None, 0, 0
    for k_first in keys[:5]:
        for c in captures:
            if c > frames[k_first][0] + 1.0:
                break
            c0 = c - k_first / 90000
            n = sum(1 for k in keys if near(c0 + k / 90000) <= tolerance)
            if n > best_n:
                best, best_n, ties = c0, n, 1
            elif n == best_n and best is not None and abs(c0 - best) > tolerance:
                ties += 1
    if best is None:
        return dict(none, frames=len(keys))
    # Frames whose capture was before the trace began cannot be matched: not counted.
    within = [k for k in keys if best + k / 90000 >= captures[0] - tolerance]
    matched = [k for k in within if near(best + k / 90000) <= tolerance]
    dequeued = dequeued or {}
    return {"first": [frames[k][0] - (best + k / 90000) for k in matched],
            "last": [frames[k][1] - (best + k / 90000) for k in matched],
            "from-dequeue": [frames[k][1] - dequeued[nearest(best + k / 90000)] for k in matched
                             if nearest(best + k / 90000) in dequeued],
            "ahead": [c - at for c, at in dequeued.items()],
            "frames": len(within), "matched": len(matched), "candidates": ties}


def webrtc_block(browser, session, url, seconds, probe=None):
    """(bytes per second, frames decoded per second, delays dict) of one viewer over `seconds`."""
    browser.call("Page.navigate", {"url": url}, session)
    try:
        return playing(browser, session, seconds, probe)
    finally:
        browser.call("Page.navigate", {"url": "about:blank"}, session)  # the page ends its session


def playing(browser, session, seconds, probe=None):
    deadline = time.monotonic() + 150  # the page waits 60 s for an answer, 45 s for a picture
    while True:
        transport = browser.evaluate(session, TRANSPORT)
        if transport == "webrtc":
            s = browser.evaluate(session, STATS)
            if s and s.get("framesDecoded", 0) > 0:
                break
        elif transport:
            why = browser.evaluate(session, "document.getElementById('view').dataset.webrtcError || ''")
            raise RuntimeError(f"the page shows {transport}: {why}")
        if time.monotonic() > deadline:
            raise RuntimeError("the page plays nothing over WebRTC after 150 s")
        time.sleep(1)
    time.sleep(3)
    if probe:
        probe.start()
    a, t0 = browser.evaluate(session, STATS), time.monotonic()
    time.sleep(seconds)
    b, t1 = browser.evaluate(session, STATS), time.monotonic()
    took = t1 - t0
    sent = probe.stop() if probe else None

    def d(key):
        return b.get(key, 0) - a.get(key, 0)

    frames = d("framesDecoded")
    delays = {
        "jitter": d("jitterBufferDelay") / d("jitterBufferEmittedCount") if d("jitterBufferEmittedCount") else float("nan"),
        "processing": d("totalProcessingDelay") / frames if frames else float("nan"),
        "decode": d("totalDecodeTime") / frames if frames else float("nan"),
        "dropped": d("framesDropped"), "frames": frames,
        "size": f"{b.get('frameWidth')}x{b.get('frameHeight')}",
        "sent": sent,
    }
    return (d("bytesReceived") + d("headerBytesReceived")) / took, frames / took, delays


def mjpeg_block(port, seconds):
    """(bytes per second, parts per second) of one /stream.mjpg reader over `seconds`."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(f"GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            raise RuntimeError("the stream closed before its head")
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    if b" 200 " not in head.split(b"\r\n")[0]:
        raise RuntimeError(f"the stream answered {head[:200]!r}")
    # from the first part's start: 3 s to settle, as the WebRTC block has
    end_settle = time.monotonic() + 3
    while time.monotonic() < end_settle:
        sock.recv(1 << 20)
    count, parts = 0, 0
    t0 = time.monotonic()
    end = t0 + seconds
    sock.settimeout(1)
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        try:
            data = sock.recv(1 << 20)
        except socket.timeout:
            continue
        if not data:
            raise RuntimeError("the stream ended")
        count += len(data)
        parts += data.count(b"X-Timestamp:")
    took = time.monotonic() - t0
    sock.close()
    return count / took, parts / took


def config(path, node, width, height, port, out):
    with open(path, "w") as f:
        f.write(f"""[camera]
device = "{node}"
width = {width}
height = {height}
fps = {FPS}
[sound]
play = "off"
[output]
directory = "{out}"
[http]
listen = "127.0.0.1:{port}"
webrtc = true
preview-width = {width}
""")


def measure(a, node, browser, session, size, tmp):
    width, height = (int(x) for x in size.split("x"))
    port = a.port
    out = f"{tmp}/out"
    os.makedirs(out, exist_ok=True)
    path = f"{tmp}/webrtc-{size}.toml"
    config(path, node, width, height, port, out)
    d = Daemon(a.evcapture, path, tmp, f"webrtc-{size}")
    probe = None
    rates = {"mjpeg": [], "webrtc": []}
    fps = {"mjpeg": [], "webrtc": []}
    delays = []
    failed = False
    try:
        try:
            d.wait_ready(120)  # Chromium starts beside it on the one emulated CPU
        except OSError as e:
            raise SystemExit(f"webrtc.py: no READY=1 from the daemon ({e}): {open(d.err_path).read()[-3000:]}")
        wait_port(port, "evcapture")
        probe = RTPProbe(d.proc.pid)
        url = f"http://127.0.0.1:{port}/"
        # GStreamer's first load reads every plugin installed (tens of seconds under emulation):
        # a first page, not counted, makes the daemon load it.
        try:
            webrtc_block(browser, session, url, 1)
        except RuntimeError as e:
            log(f"{size}: the first WebRTC page (GStreamer's load, not counted): {e}")
        for r in range(a.rounds):
            order = ["mjpeg", "webrtc"] if r % 2 == 0 else ["webrtc", "mjpeg"]
            for kind in order:
                try:
                    if kind == "mjpeg":
                        rate, f = mjpeg_block(port, a.block)
                        extra = ""
                    else:
                        rate, f, dl = webrtc_block(browser, session, url, a.block, probe)
                        delays.append(dl)
                        sent = dl["sent"]
                        extra = (f", {dl['size']}, jitter buffer {dl['jitter'] * 1000:.1f} ms, processing "
                                 f"{dl['processing'] * 1000:.1f} ms, decode {dl['decode'] * 1000:.1f} ms, dropped {dl['dropped']}"
                                 f"; frame → RTP: {sent['matched']}/{sent['frames']} frames matched ({sent['candidates']} "
                                 f"offset(s) as good), last packet max "
                                 f"{max(sent['last'], default=float('nan')) * 1000:.1f} ms")
                except (OSError, RuntimeError) as e:
                    log(f"{size} round {r + 1} {kind}: {e}")
                    failed = True
                    continue
                rates[kind].append(rate)
                fps[kind].append(f)
                log(f"{size} round {r + 1} {kind:6s}: {rate / 1000:.1f} kB/s, {f:.2f} frames/s{extra}")
    finally:
        if probe:
            probe.close()
        status = d.stop()
        log(f"{size}: daemon exit {status}")
    if not rates["mjpeg"] or not rates["webrtc"]:
        log(f"figure webrtc-bandwidth {size}: not measured")
        return True
    w, m = median(rates["webrtc"]), median(rates["mjpeg"])
    log(f"figure webrtc-bandwidth {size}: webrtc={w / 1000:.1f} mjpeg={m / 1000:.1f} kB/s ratio={w / m:.3f} "
        f"fps webrtc={median(fps['webrtc']):.2f} mjpeg={median(fps['mjpeg']):.2f} n={len(rates['webrtc'])}/{len(rates['mjpeg'])}")
    if delays:
        def mean(k):
            xs = [x[k] for x in delays if x[k] == x[k]]
            return sum(xs) / len(xs) * 1000 if xs else float("nan")
        log(f"figure webrtc-delay {size}: jitter-buffer={mean('jitter'):.1f} ms processing={mean('processing'):.1f} ms "
            f"decode={mean('decode'):.1f} ms dropped={sum(x['dropped'] for x in delays)} "
            f"frames={sum(x['frames'] for x in delays)} blocks={len(delays)}")
        first = sorted(v for x in delays for v in x["sent"]["first"])
        last = sorted(v for x in delays for v in x["sent"]["last"])
        since = sorted(v for x in delays for v in x["sent"]["from-dequeue"])
        ahead = sorted(v for x in delays for v in x["sent"]["ahead"])
        frames = sum(x["sent"]["frames"] for x in delays)
        ambiguous = sum(1 for x in delays if x["sent"]["candidates"] > 1)
        if last:
            def q(xs, p):
                return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000
            log(f"figure webrtc-rtp {size}: last p50={q(last, 0.5):.1f} p99={q(last, 0.99):.1f} max={last[-1] * 1000:.1f} ms "
                f"first p50={q(first, 0.5):.1f} p99={q(first, 0.99):.1f} ms matched={len(last)}/{frames} "
                f"ambiguous-blocks={ambiguous} interval={1000 / FPS:.1f} ms "
                f"dequeue-to-last p50={q(since, 0.5):.1f} p99={q(since, 0.99):.1f} ms "
                f"timestamp-ahead-of-dequeue p50={q(ahead, 0.5):.1f} ms")
        else:
            log(f"figure webrtc-rtp {size}: not measured (no frame matched of {frames})")
            failed = True
    return failed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("evcapture")
    p.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--block", type=float, default=10, help="seconds of viewing per block")
    p.add_argument("--sizes", default="640x480,1280x720")
    p.add_argument("--port", type=int, default=18300)
    a = p.parse_args()
    if not os.access(a.chromium, os.X_OK):
        raise SystemExit(f"webrtc.py: no chromium at {a.chromium}")
    node = vivid_node()
    if not node:
        raise SystemExit("webrtc.py: no vivid")
    set_rate(node, FPS)
    # vivid stamps a frame's end by default, most of a frame interval ahead of handing it
    # over; the daemon sends a frame stamped ahead at once (docs/live-view.md#webrtc), so its
    # RTP timestamp would not be its stamp. Start of exposure, as a webcam's: in the past.
    soe = subprocess.run(["v4l2-ctl", "-d", node, "-c", "timestamp_source=1"], capture_output=True, text=True)
    if soe.returncode != 0:
        raise SystemExit(f"webrtc.py: cannot set vivid's timestamp source: {soe.stderr}")
    tmp = os.environ.get("TMPDIR", "/tmp") + "/evc-bench-webrtc"
    os.makedirs(tmp, exist_ok=True)
    log(f"vivid {node} YUYV at {FPS} fps; {a.rounds} rounds of {a.block:.0f} s blocks per size, one viewer: "
        f"Chromium's WebRTC page against a /stream.mjpg reader")
    browser = Chromium(a.chromium, f"{tmp}/chromium")
    failed = False
    try:
        session = browser.page()
        for size in a.sizes.split(","):
            failed |= measure(a, node, browser, session, size, tmp)
    finally:
        browser.close()
    set_rate(node, 5)
    subprocess.run(["v4l2-ctl", "-d", node, "-c", "timestamp_source=0"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
