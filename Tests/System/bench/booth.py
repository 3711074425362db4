#!/usr/bin/env python3
"""Booth figures (BENCHMARKS.md: "booth"; docs/booth.md), run in the test VM by
Tests/System/bench/guest.sh (EVC_BENCH_ONLY=booth, or as part of every run).

vivid (640x480 YUYV, its default rate) is the capture camera; a uinput gpio-keys-like device
(uinput-flood 1) clicks KEY_VOLUMEDOWN; a CP2112 USB-HID GPIO expander is emulated on
/dev/uhid (gpio-bench cp2112: the kernel's hid-cp2112 makes a real gpiochip) with a jumper
from line 3 (the daemon's output) to line 6 (an input that gpio-bench monitor follows).

  interval  vivid's real frame interval in this boot (v4l2-ctl, the driver's timestamps)
  edge      rounds of two blocks in alternating order:
            daemon: evcapture with a timelapse (--interval) and [outputs.flash] on line 3,
              follow = "shot", pulse 0.1 s; --shots shots per block. Per shot taken:
              pin   = when the driver's GPIO set reached the emulated chip (CLOCK_MONOTONIC
                      in the emulator: on hardware, the pin's change less the USB transfer)
              edge  = the kernel's timestamp of the line event on line 6 (gpiolib's
                      CLOCK_MONOTONIC). hid-cp2112 has no GPIO interrupt: it polls the input
                      levels every 10 jiffies (40 ms at Debian's HZ=250) and the event is
                      stamped when a poll sees the change, so edge = pin + 0..40 ms + the poll's
                      USB-HID round trip.
              against the photo's frame_time (the frame nearest the shot's moment), and pin
              against the shot's moment (start + n x interval).
            floor: gpio-bench pulse, a C program that sleeps until the same kind of moment
              (clock_nanosleep, TIMER_ABSTIME) and sets line 3 through libgpiod: pin and
              edge against that moment, the least any program can do on this chip.
  drift     one timelapse of --drift-shots shots every --drift-interval s: every shot's
            frame_time against start + n x interval (it must stay within half a frame
            interval, the nearest frame), the mean offset of the first and last ten shots.

Usage: booth.py EVCAPTURE UINPUT_FLOOD GPIO_BENCH [--rounds N] [--shots N] [--interval S]
                [--drift-shots N] [--drift-interval S]
Prints "figure booth ..." lines; exits 1 if something could not be measured.
"""
import argparse
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shutter import Daemon, Keys  # noqa: E402
from tracing import TraceInstance  # noqa: E402
from vivid import measure_interval, vivid_node  # noqa: E402

OUT, IN = 3, 6
PULSE = 0.1


class SchedTrace(TraceInstance):
    """With EVC_BENCH_BOOTH_TRACE=1: the kernel's sched:sched_switch events in a tracing
    instance of its own (trace clock mono, CLOCK_MONOTONIC as the moments), to say which
    threads had the one CPU between a shot's moment and its pin."""

    LINE = re.compile(r"\s(?P<at>\d+\.\d+): sched_switch: prev_comm=.*? prev_pid=\d+ .*==> next_comm=(?P<next>.*?) next_pid=\d+")

    def __init__(self):
        super().__init__("evc-booth", "sched/sched_switch", 8192)
        self.windows = []

    def collect(self, windows):
        """Each (moment, pin) window's CPU time per thread name, from the trace since clear()."""
        switches = []
        for line in self.lines():
            m = self.LINE.search(line)
            if m:
                switches.append((float(m["at"]), m["next"]))
        for moment, pin in windows:
            ran = {}
            for (t0, comm), (t1, _) in zip(switches, switches[1:]):
                lo, hi = max(t0, moment), min(t1, pin)
                if hi > lo:
                    ran[comm] = ran.get(comm, 0) + hi - lo
            self.windows.append((pin - moment, ran))

    def report(self):
        if not self.windows:
            return
        ordered = sorted(self.windows, key=lambda w: w[0])
        for label, part in (("all", ordered), ("slowest tenth", ordered[-max(1, len(ordered) // 10):])):
            total = {}
            for _, ran in part:
                for comm, t in ran.items():
                    total[comm] = total.get(comm, 0) + t
            top = sorted(total.items(), key=lambda kv: -kv[1])[:8]
            log(f"figure booth pulse-window ({label}, {len(part)} shots, mean moment -> pin "
                f"{ms(sum(w for w, _ in part) / len(part))} ms): mean CPU ms per shot by thread: "
                + ", ".join(f"{comm} {ms(t / len(part))}" for comm, t in top))


def log(*a):
    print(*a, flush=True)


def p99(xs):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]


def p50(xs):
    s = sorted(xs)
    return s[len(s) // 2]


def ms(x):
    return f"{x * 1000:.1f}"


class Lines:
    """A child's stdout lines, each kept with the words split, read on a thread."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.lines = []
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            with self.changed:
                self.lines.append(raw.split())
                self.changed.notify_all()

    def wait(self, match, timeout):
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                found = [w for w in self.lines if match(w)]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.changed.wait(left)

    def since(self, n):
        with self.changed:
            return list(self.lines[n:])

    def count(self):
        with self.changed:
            return len(self.lines)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def chip_node():
    """/dev/gpiochipN of the emulated CP2112 (its device sits under HID 0003:10C4:EA90)."""
    base = "/sys/bus/gpio/devices"
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        if name.startswith("gpiochip") and "10C4:EA90" in os.path.realpath(f"{base}/{name}").upper():
            return f"/dev/{name}"
    return None


def rising(lines, kind):
    """CLOCK_MONOTONIC seconds of every rising level on OUT (pin) or IN (edge), in order."""
    if kind == "pin":
        return [int(w[3]) / 1e9 for w in lines if w[0] == "set" and int(w[1]) == OUT and w[2] == "1"]
    return [int(w[2]) / 1e9 for w in lines if w[0] == "edge" and w[1] == "rising"]


def first_after(times, t, within):
    """The first time in [t - 1 ms, t + within), or None."""
    for x in times:
        if t - 0.001 <= x < t + within:
            return x
    return None


def write_config(path, node, out, interval, chip=None):
    with open(path, "w") as f:
        f.write(f"""[camera]
device = "none"
capture-device = "{node}"
width = 640
height = 480
stream = "always"
[handlers.primary]
timelapse = {interval}
long-press = "none"
[sound]
play = "off"
[output]
directory = "{out}"
""" + (f"""[outputs.flash]
chip = "{chip}"
line = {OUT}
follow = "shot"
pulse = {PULSE}
""" if chip else ""))


def timelapse(a, keys, config, tmp, name, shots, interval):
    """Runs one timelapse of `shots` slots; returns (start, [(slot, frame_time or None)]), in
    seconds of CLOCK_MONOTONIC as the lines give them."""
    d = Daemon(a.evcapture, config, tmp, name)
    d.wait_ready()
    time.sleep(3)  # the ring runs
    keys.click(50_000)
    started = d.wait_line(lambda o: o.get("event") == "timelapse" and o.get("state") == "started", 10)
    if not started:
        log(f"  {name}: no timelapse started")
        d.stop()
        return None, []
    start = started[1]["next_time"]

    def progress():
        return [o for _, o in d.lines if o.get("event") == "timelapse" and o.get("state") in ("shot", "missed")]

    deadline = time.monotonic() + shots * interval + 30
    with d.changed:
        while len(progress()) < shots and time.monotonic() < deadline:
            d.changed.wait(1)
    keys.click(50_000)
    d.wait_line(lambda o: o.get("event") == "timelapse" and o.get("state") == "stopped", 10)
    time.sleep(PULSE + 0.3)  # the last pulse's end
    status = d.stop()
    if status != 0:
        log(f"  {name}: daemon exit status {status}")
    out = []
    for o in progress()[:shots]:
        slot = o["count"] + o["missed"] - 1
        out.append((slot, o.get("frame_time") if o["state"] == "shot" else None))
    return start, out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("evcapture")
    p.add_argument("flood")
    p.add_argument("gpio_bench")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--shots", type=int, default=40, help="timelapse shots per daemon block (and pulses per floor block)")
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--drift-shots", type=int, default=100)
    p.add_argument("--drift-interval", type=float, default=1.0)
    a = p.parse_args()
    tmp = os.environ.get("TMPDIR", "/tmp") + "/evc-booth"
    os.makedirs(tmp, exist_ok=True)
    node = vivid_node()
    if not node:
        log("booth.py: no vivid capture node (vivid-000-vid-cap)")
        sys.exit(1)
    failed = False
    iv = measure_interval(node, 640, 480)
    if not iv:
        log("booth.py: could not measure vivid's frame interval")
        sys.exit(1)
    frame = iv[0]
    log(f"figure booth vivid-interval: 640x480 mean {ms(frame)} ms ({1 / frame:.2f} fps), max {ms(iv[1])} ms")

    emu = Lines([a.gpio_bench, "cp2112", str(OUT), str(IN)])
    chip = None
    deadline = time.monotonic() + 15
    while chip is None and time.monotonic() < deadline:
        chip = chip_node()
        time.sleep(0.1)
    if not chip:
        log("booth.py: hid-cp2112 made no gpiochip for the emulated CP2112")
        emu.stop()
        sys.exit(1)
    subprocess.run(["udevadm", "settle", "--timeout=10"])
    mon = Lines([a.gpio_bench, "monitor", chip, str(IN)])
    if not mon.wait(lambda w: w == ["ready"], 10):
        log("booth.py: the edge monitor did not start")
        failed = True
    keys = Keys(a.flood)
    log(f"vivid {node}; CP2112 {chip}, jumper line {OUT} -> line {IN}; keys {keys.node}; tmp {tmp}")

    trace = SchedTrace() if os.environ.get("EVC_BENCH_BOOTH_TRACE") == "1" else None
    daemon = {"pin-frame": [], "edge-frame": [], "pin-moment": [], "edge-pin": [], "missed": 0, "unmatched": 0, "shots": 0}
    floor = {"pin-moment": [], "edge-moment": [], "edge-pin": [], "unmatched": 0, "pulses": 0}
    block = 0
    for rnd in range(a.rounds):
        for kind in (("daemon", "floor") if rnd % 2 == 0 else ("floor", "daemon")):
            block += 1
            e0, m0 = emu.count(), mon.count()
            if kind == "daemon":
                config = f"{tmp}/booth-b{block}.toml"
                write_config(config, node, f"{tmp}/out-b{block}", a.interval, chip)
                if trace:
                    trace.clear()
                start, shots = timelapse(a, keys, config, tmp, f"b{block}", a.shots, a.interval)
                windows = []
                if start is None:
                    failed = True
                    continue
                pins, edges = rising(emu.since(e0), "pin"), rising(mon.since(m0), "edge")
                for slot, ft in shots:
                    moment = start + slot * a.interval
                    if ft is None:
                        daemon["missed"] += 1
                        continue
                    daemon["shots"] += 1
                    pin = first_after(pins, moment, a.interval / 2)
                    edge = first_after(edges, pin, a.interval / 2) if pin is not None else None
                    if pin is None or edge is None:
                        daemon["unmatched"] += 1
                        continue
                    daemon["pin-frame"].append(abs(pin - ft))
                    daemon["edge-frame"].append(abs(edge - ft))
                    daemon["pin-moment"].append(pin - moment)
                    daemon["edge-pin"].append(edge - pin)
                    windows.append((moment, pin))
                if trace:
                    trace.collect(windows)
            else:
                pulse = Lines([a.gpio_bench, "pulse", chip, str(OUT)])
                if not pulse.wait(lambda w: w == ["ready"], 10):
                    log("booth.py: the floor could not take line 3")
                    failed = True
                    pulse.stop()
                    continue
                first = time.clock_gettime(time.CLOCK_MONOTONIC) + 1
                moments = [first + k * a.interval for k in range(a.shots)]
                for t in moments:
                    pulse.proc.stdin.write(f"{int(t * 1e6)} {int(PULSE * 1e6)}\n")
                pulse.proc.stdin.flush()
                pulse.wait(lambda w: w[0] == "pulse" and int(w[1]) == int(moments[-1] * 1e6), a.shots * a.interval + 15)
                pulse.proc.stdin.close()
                pulse.proc.wait(10)
                time.sleep(0.3)
                pins, edges = rising(emu.since(e0), "pin"), rising(mon.since(m0), "edge")
                for t in moments:
                    floor["pulses"] += 1
                    pin = first_after(pins, t, a.interval / 2)
                    edge = first_after(edges, pin, a.interval / 2) if pin is not None else None
                    if pin is None or edge is None:
                        floor["unmatched"] += 1
                        continue
                    floor["pin-moment"].append(pin - t)
                    floor["edge-moment"].append(edge - t)
                    floor["edge-pin"].append(edge - pin)
            log(f"round {rnd}: {kind} block done")

    if daemon["unmatched"] or floor["unmatched"] or not daemon["edge-frame"] or not floor["pin-moment"]:
        failed = True
    if daemon["edge-frame"]:
        log(f"figure booth gpio-edge: p99 |edge - frame_time| {ms(p99(daemon['edge-frame']))} ms "
            f"(p50 {ms(p50(daemon['edge-frame']))}, max {ms(max(daemon['edge-frame']))}), "
            f"p99 |pin - frame_time| {ms(p99(daemon['pin-frame']))} ms (max {ms(max(daemon['pin-frame']))}); "
            f"frame interval {ms(frame)} ms; {daemon['shots']} shots, {daemon['missed']} missed, {daemon['unmatched']} without a pulse")
        log(f"figure booth gpio-latency: pin - shot moment p50 {ms(p50(daemon['pin-moment']))} p99 {ms(p99(daemon['pin-moment']))} "
            f"max {ms(max(daemon['pin-moment']))} ms; floor p50 {ms(p50(floor['pin-moment'] or [0]))} "
            f"p99 {ms(p99(floor['pin-moment'] or [0]))} max {ms(max(floor['pin-moment'] or [0]))} ms "
            f"({floor['pulses']} pulses, {floor['unmatched']} unmatched)")
        log(f"  edge - pin (hid-cp2112's input poll): evcapture p50 {ms(p50(daemon['edge-pin']))} max {ms(max(daemon['edge-pin']))} ms; "
            f"floor p50 {ms(p50(floor['edge-pin'] or [0]))} max {ms(max(floor['edge-pin'] or [0]))} ms")
    if trace:
        trace.report()
        trace.close()
    mon.stop()
    emu.stop()

    # drift: one long timelapse, no outputs
    config = f"{tmp}/booth-drift.toml"
    write_config(config, node, f"{tmp}/out-drift", a.drift_interval)
    start, shots = timelapse(a, keys, config, tmp, "drift", a.drift_shots, a.drift_interval)
    offsets = [ft - start - slot * a.drift_interval for slot, ft in shots if ft is not None]
    missed = sum(1 for _, ft in shots if ft is None)
    if start is None or len(shots) < a.drift_shots:
        log(f"booth.py: the drift timelapse gave {len(shots)} of {a.drift_shots} shots")
        failed = True
    if offsets:
        first, last = offsets[:10], offsets[-10:]
        log(f"figure booth timelapse-drift: {len(shots)} shots every {a.drift_interval} s, {missed} missed: "
            f"max |frame_time - (start + n x interval)| {ms(max(abs(x) for x in offsets))} ms, "
            f"half a frame interval {ms(frame / 2)} ms; mean offset shots 1-10 {sum(first) / len(first) * 1000:+.1f} ms, "
            f"last 10 {sum(last) / len(last) * 1000:+.1f} ms")
    keys.close()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
