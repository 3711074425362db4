#!/usr/bin/env python3
"""Many stations, one press (BENCHMARKS.md: "rig trigger", "rig frames").

Run in the test VM by Tests/System/bench/guest.sh (EVC_BENCH_ONLY=rig, or as part of every
run). mosquitto (Debian's, as the rig tests run it) listens on the guest's loopback; three
evcapture daemons, each on its own vivid instance (320x240, stream = "always": the ring
runs): station a has fan-out = "all" and the uinput key (uinput-flood 1), b and c ignore
the key and take a's triggers.

  trigger   press on a -> the trigger received on b and c: the `time` of b's and c's `action`
            line with action "trigger" (CLOCK_MONOTONIC, taken by the station when it has
            parsed and accepted the trigger message, before it acts) - the `time` of a's
            `ended` capture line (the kernel's CLOCK_MONOTONIC timestamp of the key-up: a
            click is decided, and fanned out, at the release). It holds a's evdev read, its
            pipeline and publish, the broker, and b's/c's receive and message check.
            Beside it, "pipe": the arrival of that line on the bench's pipe (adds the
            daemon's line writer, the pipe and this Python reader's scheduling).
  floor     mosquitto's own publish -> receive (mqtt-floor: libmosquitto, QoS 1,
            TCP_NODELAY, like the daemons): one publisher, two subscribers; each
            subscriber's CLOCK_MONOTONIC in its message callback - CLOCK_MONOTONIC just
            before mosquitto_publish; "pipe": the arrival of its "recv" line on the bench's
            pipe instead. Same broker, same boot, the three daemons running meanwhile.
            Blocks of `--per-block` presses and of as many floor messages alternate for
            `--rounds` rounds (which comes first alternates too): emulated timings drift.
  split     where the trigger's time goes: a plain libmosquitto subscriber (mqtt-floor sub)
            on a's fan-out topic too; key-up -> its receive stamp is a's side (evdev read,
            pipeline, publish) plus the broker and a floor receive; b's and c's trigger
            line's time - that stamp, for the same message, is their receive side against
            the floor's.
  spread    per press: max - min of the three photos' frame_time (one kernel clock in the
            VM), and each photo's frame_time - a's `began` time (the press).

--mode first: the first trigger a station takes after it starts: per round the three daemons
are started, with one press on a once they are connected (3 s after READY=1), then stopped;
the messaging config.

--mode full (the default): as above, every station takes its photo. --mode messaging: no
cameras and no photo on a (click = "none"; its press still fans out), so that no JPEG
encode competes with the trigger's delivery for the guest's one CPU; b and c still act on
the trigger (their photo fails at once: no camera), and the trigger line is awaited as
in full. No spread then. --mode solo: station a alone (no camera, fan-out on, the broker
and the plain subscriber as in messaging): a's own side without b and c competing for the
CPU.

Usage: rig.py EVCAPTURE UINPUT_FLOOD MQTT_FLOOR [--rounds N] [--per-block N] [--mode full|messaging|solo|first]
Prints "figure rig ..." lines; exits 1 if something could not be measured.
"""
import argparse
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shutter import Daemon, Keys, log  # noqa: E402
from vivid import measure_interval  # noqa: E402

PORT = 18830
STATIONS = ["a", "b", "c"]


def vivid(instance):
    base = "/sys/class/video4linux"
    for entry in sorted(os.listdir(base)):
        try:
            if open(f"{base}/{entry}/name").read().strip() == f"vivid-00{instance}-vid-cap":
                return f"/dev/{entry}"
        except OSError:
            pass
    return None


def pct(xs, q):
    """Nearest-rank percentile (q in 0...100)."""
    s = sorted(xs)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def fmt(xs):
    if not xs:
        return "no samples"
    ms = [x * 1000 for x in xs]
    return f"n={len(ms)} p50={pct(ms, 50):.2f} p90={pct(ms, 90):.2f} p99={pct(ms, 99):.2f} max={max(ms):.2f} min={min(ms):.2f} ms"


class Lines:
    """A child's stdout lines with their arrival time (CLOCK_MONOTONIC), read on a thread."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.lines = []
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            t = time.monotonic()
            with self.changed:
                self.lines.append((t, raw.split()))
                self.changed.notify_all()

    def wait(self, match, timeout=10):
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for t, words in self.lines:
                    if match(words):
                        return t, words
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.changed.wait(left)

    def send(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def stop(self):
        self.proc.stdin.close()
        self.proc.kill()
        self.proc.wait(10)


def config(path, station, node, out, fan_out, ignore_keys):
    camera = f"""capture-device = "{node}"
width = 320
height = 240
stream = "always"
""" if node else ""
    with open(path, "w") as f:
        f.write(f"""[camera]
device = "none"
{camera}[handlers.primary]
click = "{'photo' if node else 'none'}"
long-press = "none"
[sound]
play = "off"
[output]
directory = "{out}"
photo-name = "{{trigger}}-{station}.jpg"
[mqtt]
url = "mqtt://127.0.0.1:{PORT}"
station = "{station}"
fan-out = "{fan_out}"
discovery = false
""" + ("""[devices.keys]
name = "evcapture bench keys 0"
kind = "ignore"
""" if ignore_keys else ""))


def floor_block(pub, subs, n, seq, samples):
    for _ in range(n):
        seq += 1
        pub.send(f"send {seq}")
        sent = pub.wait(lambda w, s=seq: w[:2] == ["sent", str(s)])
        if not sent:
            log(f"  floor: message {seq} not sent")
            samples["floor-failed"] += 1
            continue
        t0 = float(sent[1][2])
        for name, sub in subs.items():
            got = sub.wait(lambda w, s=seq: w[:2] == ["recv", str(s)])
            if got:
                samples["floor"].append(float(got[1][2]) - t0)
                samples[f"floor-{name}"].append(float(got[1][2]) - t0)
                samples["floor-pipe"].append(got[0] - t0)
            else:
                log(f"  floor: {name} did not receive {seq}")
                samples["floor-failed"] += 1
        time.sleep(1.0 + random.random() * 0.3)
    return seq


def evcapture_block(keys, daemons, watch, n, seen, samples, photos):
    a = daemons["a"]
    for _ in range(n):
        keys.click(50_000)
        ended = a.wait_line(lambda o: o.get("event") == "capture" and o.get("phase") == "ended"
                            and o.get("press") not in seen, 10)
        if not ended:
            log("  press: no ended line on a")
            samples["failed"] += 1
            continue
        press = ended[1]["press"]
        seen.add(press)
        samples["ended-line"].append(ended[0] - ended[1]["time"])
        began = a.wait_line(lambda o: o.get("event") == "capture" and o.get("phase") == "began" and o.get("press") == press, 5)
        frames = {}
        if photos:
            photo_a = a.wait_line(lambda o: o.get("event") == "action" and o.get("action") == "photo" and o.get("press") == press, 15)
            if not began or not photo_a:
                log(f"  press {press}: no began or photo line on a")
                samples["failed"] += 1
                continue
            frames["a"] = photo_a[1]["frame_time"]
        # a's trigger id: "a-<press time in ms>-<press>"
        ours = lambda t: t.startswith("a-") and t.endswith(f"-{press}")  # noqa: E731
        seen_at = watch.wait(lambda w: len(w) > 1 and w[0] == "recv" and '"from":"a"' in w[1]
                             and f'"trigger":"a-' in w[1] and f'-{press}"' in w[1])
        if seen_at:
            samples["sent"].append(float(seen_at[1][-1]) - ended[1]["time"])
        for name in [n for n in ["b", "c"] if n in daemons]:
            d = daemons[name]
            heard = d.wait_line(lambda o: o.get("action") == "trigger" and ours(o.get("trigger", "")), 10)
            photo = d.wait_line(lambda o: o.get("action") == "photo" and ours(o.get("trigger", "")), 15) if photos else None
            if not heard or (photos and not photo):
                log(f"  press {press}: {name} heard {bool(heard)}, photo {bool(photo)}")
                samples["failed"] += 1
                continue
            latency = heard[1]["time"] - ended[1]["time"]
            samples["trigger"].append(latency)
            samples[f"trigger-{name}"].append(latency)
            samples["trigger-pipe"].append(heard[0] - ended[1]["time"])
            samples["trigger-which"].append((latency, f"press {len(seen)} on {name}"))
            if seen_at:
                samples["receive"].append(heard[1]["time"] - float(seen_at[1][-1]))
            if photo:
                frames[name] = photo[1]["frame_time"]
        if len(frames) == 3:
            samples["spread"].append(max(frames.values()) - min(frames.values()))
            for name, ft in frames.items():
                samples[f"offset-{name}"].append(ft - began[1]["time"])
        time.sleep(1.0 + random.random() * 0.3)


def first_triggers(evcapture, keys, tmp, rounds):
    """--mode first: b's and c's first trigger after start."""
    results = {"first": []}
    run = 0
    for r in range(rounds):
        for variant in ["first"]:
            run += 1
            daemons = {}
            for s in STATIONS:
                out = f"{tmp}/out-first-{run}-{s}"
                os.makedirs(out)
                config(f"{tmp}/first-{s}.toml", s, None, out, "all" if s == "a" else "none", s != "a")
                daemons[s] = Daemon(evcapture, f"{tmp}/first-{s}.toml", tmp, f"first-{run}-{s}")
            for d in daemons.values():
                d.wait_ready()
            time.sleep(3)  # connected, subscribed (and warmed up)
            keys.click(50_000)
            ended = daemons["a"].wait_line(lambda o: o.get("event") == "capture" and o.get("phase") == "ended", 10)
            for name in ["b", "c"]:
                heard = daemons[name].wait_line(lambda o: o.get("action") == "trigger", 10)
                if ended and heard:
                    results[variant].append(heard[1]["time"] - ended[1]["time"])
                else:
                    log(f"  first: run {run} ({variant}): {name} heard nothing")
            for d in daemons.values():
                d.stop()
    for variant, xs in results.items():
        log(f"figure rig first trigger after start, {variant} (a's key-up -> trigger received on b and c): {fmt(xs)}")
    return 0 if all(len(xs) == 2 * rounds for xs in results.values()) else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("evcapture")
    p.add_argument("flood")
    p.add_argument("floor")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--per-block", type=int, default=10)
    p.add_argument("--mode", choices=["full", "messaging", "solo", "first"], default="full")
    a = p.parse_args()
    photos = a.mode == "full"
    tmp = tempfile.mkdtemp(prefix="evc-rig-")
    if photos:
        nodes = {s: vivid(i) for i, s in enumerate(STATIONS)}
        if None in nodes.values():
            log(f"figure rig: needs three vivid instances, found {nodes}")
            return 1
        iv = measure_interval(nodes["a"], 320, 240)
        if iv:
            log(f"figure rig vivid-interval: 320x240 mean {iv[0] * 1000:.2f} ms, median {iv[2] * 1000:.2f}, max {iv[1] * 1000:.2f}")
    else:
        nodes = {s: None for s in STATIONS}

    with open(f"{tmp}/mosquitto.conf", "w") as f:
        f.write(f"listener {PORT} 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\n")
    broker = subprocess.Popen(["mosquitto", "-c", f"{tmp}/mosquitto.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    keys = Keys(a.flood)
    if a.mode == "first":
        status = first_triggers(a.evcapture, keys, tmp, a.rounds)
        keys.close()
        broker.terminate()
        broker.wait(10)
        return status
    daemons = {}
    stations = ["a"] if a.mode == "solo" else STATIONS
    for s in stations:
        out = f"{tmp}/out-{s}"
        os.makedirs(out)
        config(f"{tmp}/{s}.toml", s, nodes[s], out, "all" if s == "a" else "none", s != "a")
        daemons[s] = Daemon(a.evcapture, f"{tmp}/{s}.toml", tmp, s)
    for d in daemons.values():
        d.wait_ready()
    online = subprocess.run(["mosquitto_sub", "-p", str(PORT), "-t", "evcapture/+/status", "-C", str(len(stations)), "-W", "20", "-v"],
                            capture_output=True, text=True)
    log(f"rig: {online.stdout.strip()!r}")
    time.sleep(2)  # the rings run
    subs = {s: Lines([a.floor, "sub", str(PORT), "floor/all/trigger"]) for s in ["b", "c"]}
    for s in subs.values():
        s.wait(lambda w: w == ["ready"])
    pub = Lines([a.floor, "pub", str(PORT), "floor/all/trigger"])
    pub.wait(lambda w: w == ["ready"])
    watch = Lines([a.floor, "sub", str(PORT), "evcapture/all/trigger"])
    watch.wait(lambda w: w == ["ready"])

    samples = {k: [] for k in ["floor", "floor-b", "floor-c", "floor-pipe", "trigger", "trigger-b", "trigger-c", "trigger-pipe", "trigger-which", "spread",
                               "offset-a", "offset-b", "offset-c", "sent", "receive", "ended-line"]}
    samples["failed"] = samples["floor-failed"] = 0
    seq, seen = 0, set()
    for r in range(a.rounds):
        log(f"rig: round {r + 1}/{a.rounds}")
        if r % 2 == 0:
            seq = floor_block(pub, subs, a.per_block, seq, samples)
            evcapture_block(keys, daemons, watch, a.per_block, seen, samples, photos)
        else:
            evcapture_block(keys, daemons, watch, a.per_block, seen, samples, photos)
            seq = floor_block(pub, subs, a.per_block, seq, samples)

    pub.stop()
    watch.stop()
    for s in subs.values():
        s.stop()
    # (messaging: b's and c's photos fail for want of a camera, as they are meant to)
    errors = [o for d in daemons.values() for _, o in d.lines if o.get("event") == "error" and o.get("code") != "no-camera"]
    for d in daemons.values():
        d.stop()
    keys.close()
    broker.terminate()
    broker.wait(10)

    log(f"figure rig mode {a.mode}")
    log(f"figure rig floor (mosquitto publish -> receive callback, b and c): {fmt(samples['floor'])}")
    log(f"figure rig trigger (a's key-up -> trigger received on b and c, the line's time): {fmt(samples['trigger'])}")
    if samples["trigger-which"]:
        log("figure rig slowest triggers: " + ", ".join(f"{w} ({t * 1000:.2f} ms)" for t, w in sorted(samples["trigger-which"])[-4:][::-1]))
    for s in ["b", "c"]:
        log(f"figure rig floor {s}: {fmt(samples['floor-' + s])}; trigger {s}: {fmt(samples['trigger-' + s])}")
    if samples["floor"] and samples["trigger"]:
        ms = lambda xs, q: pct(xs, q) * 1000  # noqa: E731
        log(f"figure rig added over the floor: p50 {ms(samples['trigger'], 50) - ms(samples['floor'], 50):+.2f} ms, "
            f"p99 {ms(samples['trigger'], 99) - ms(samples['floor'], 99):+.2f} ms (goal: at most +1 ms at p99)")
        log(f"figure rig pipe: floor's recv line on the bench's pipe: {fmt(samples['floor-pipe'])}; "
            f"b's/c's trigger line on the pipe: {fmt(samples['trigger-pipe'])}; added p50 "
            f"{ms(samples['trigger-pipe'], 50) - ms(samples['floor-pipe'], 50):+.2f} ms, p99 "
            f"{ms(samples['trigger-pipe'], 99) - ms(samples['floor-pipe'], 99):+.2f} ms")
    log(f"figure rig split: a's key-up -> a plain subscriber's receive: {fmt(samples['sent'])}")
    log(f"figure rig split: a's key-up -> a's own ended line on the pipe: {fmt(samples['ended-line'])}")
    log(f"figure rig split: b's/c's trigger received - the plain subscriber's receive (same message): {fmt(samples['receive'])}")
    if not photos:
        log(f"figure rig failed: presses {samples['failed']}, floor messages {samples['floor-failed']}, error lines {len(errors)}")
        for e in errors[:5]:
            log(f"  error: {e}")
        return 0 if (samples["trigger"] or a.mode == "solo") and samples["floor"] and not samples["failed"] else 1
    log(f"figure rig spread (max - min frame_time of a, b, c per press): {fmt(samples['spread'])}")
    for s in STATIONS:
        log(f"figure rig offset {s} (frame_time - a's began): {fmt(samples['offset-' + s])}")
    log(f"figure rig failed: presses {samples['failed']}, floor messages {samples['floor-failed']}, error lines {len(errors)}")
    for e in errors[:5]:
        log(f"  error: {e}")
    return 0 if samples["trigger"] and samples["floor"] and not samples["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
