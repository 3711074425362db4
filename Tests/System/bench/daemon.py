#!/usr/bin/env python3
"""Daemon figures on a real kernel (run in the test VM by Tests/System/bench/guest.sh).

`evcapture run --json` with 5 uinput input devices (4 key devices + 1 dial, made by
uinput-flood) and the fake UVC camera open for controls:

  start   spawn → READY=1 on a datagram socket this script owns (NOTIFY_SOCKET), N runs
  idle    voluntary and involuntary context switches of every thread
          (/proc/PID/task/*/status) before and after 10 s with nothing happening
  memory  VmRSS at steady state, then after PRESSES clicks (2 key events + 2 SYN_REPORT
          each; every click is a began and an ended capture event) written through uinput

Usage: daemon.py EVCAPTURE UINPUT_FLOOD [--presses N] [--starts N] [--idle S]
Prints one "figure ..." line per result; exits 1 if something could not be measured.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time


def log(*a):
    print(*a, flush=True)


def video_node(card):
    """/dev/videoN of the first capture interface whose name starts with card."""
    base = "/sys/class/video4linux"
    for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            name = open(f"{base}/{entry}/name").read().strip()
            index = open(f"{base}/{entry}/index").read().strip()
        except OSError:
            continue
        if name.startswith(card) and index == "0" and os.path.exists(f"/dev/{entry}"):
            return f"/dev/{entry}"
    return None


def wait_for(what, condition, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = condition()
        if v:
            return v
        time.sleep(0.05)
    raise SystemExit(f"daemon.py: timed out waiting for {what}")


def threads(pid):
    """{tid: (name, voluntary, nonvoluntary)} of every thread of pid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        fields = {}
        try:
            for line in open(f"/proc/{pid}/task/{tid}/status"):
                k, _, v = line.partition(":")
                fields[k] = v.strip()
        except OSError:
            continue
        out[int(tid)] = (fields.get("Name", "?"), int(fields.get("voluntary_ctxt_switches", -1)),
                         int(fields.get("nonvoluntary_ctxt_switches", -1)))
    return out


def cpu_seconds(pid):
    """utime + stime of the whole process, in seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rollup_kb(pid, field):
    """A field of /proc/PID/smaps_rollup, in kB."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def anonymous_by_mapping(pid, exe):
    """Where the private memory (smaps' Anonymous) is: the executable's relocated and written
    data, the heap, other anonymous mappings (thread stacks, malloc arenas), the shared
    libraries' written pages. kB each."""
    parts = {"executable": 0, "heap": 0, "anonymous": 0, "libraries": 0}
    name = None
    real = os.path.realpath(exe)
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                path = head[5] if len(head) > 5 else ""
                name = ("executable" if path and os.path.realpath(path) == real else
                        "heap" if path == "[heap]" else
                        "anonymous" if not path.startswith("/") else "libraries")
            elif line.startswith("Anonymous:") and name:
                parts[name] += int(line.split()[1])
    return parts


def status_kb(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return -1


class NotifiedDaemon:
    """evcapture run --json with NOTIFY_SOCKET (READY=1 is awaited there); stdout is read by
    the subclass's `_read` on a thread of its own."""

    def __init__(self, exe, config, tmp, name, log_level, extra_env=None):
        self.sock_path = f"{tmp}/notify-{name}"
        if os.path.exists(self.sock_path):
            os.unlink(self.sock_path)
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.sock_path)
        env = dict(os.environ, NOTIFY_SOCKET=self.sock_path, HOME=tmp, XDG_STATE_HOME=f"{tmp}/state", **(extra_env or {}))
        self.err_path = f"{tmp}/daemon-{name}.err"
        self.changed = threading.Condition()
        self.started = time.monotonic()
        self.proc = subprocess.Popen([exe, "run", "--json", "--config", config, "--log-level", log_level],
                                     stdout=subprocess.PIPE, stderr=open(self.err_path, "w"), env=env)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def wait_ready(self, timeout=30):
        """Seconds from the start to READY=1."""
        self.notify.settimeout(timeout)
        while True:
            if b"READY=1" in self.notify.recv(4096).split(b"\n"):
                return time.monotonic() - self.started

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = "killed after 20 s"
        self.reader.join(5)
        self.notify.close()
        os.unlink(self.sock_path)
        return status


class Daemon(NotifiedDaemon):
    """Counts began/ended lines as they come."""

    def __init__(self, exe, config, tmp, n, extra_env=None):
        self.began = self.ended = self.cancelled = self.errors = 0
        self.tail = b""
        super().__init__(exe, config, tmp, n, "warning", extra_env)

    def _read(self):
        fd = self.proc.stdout.fileno()
        carry = b""
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return
            data = carry + chunk
            cut = data.rfind(b"\n") + 1
            whole, carry = data[:cut], data[cut:]
            self.began += whole.count(b'"phase":"began"')
            self.ended += whole.count(b'"phase":"ended"')
            self.cancelled += whole.count(b'"phase":"cancelled"')
            self.errors += whole.count(b'"event":"error"')
            self.tail = (self.tail + whole)[-4000:]
            with self.changed:
                self.changed.notify_all()

    def wait_began(self, count, timeout):
        """Waits until `count` began lines were seen; False after `timeout` s without progress."""
        with self.changed:
            last, since = self.began, time.monotonic()
            while self.began < count:
                self.changed.wait(0.5)
                if self.began != last:
                    last, since = self.began, time.monotonic()
                elif time.monotonic() - since > timeout:
                    return False
        return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("evcapture")
    p.add_argument("flood")
    p.add_argument("--presses", type=int, default=250_000)
    p.add_argument("--starts", type=int, default=5)
    p.add_argument("--idle", type=float, default=10.0)
    p.add_argument("--baseline", help="another evcapture build (say, main's before a change): idle wakeups and private "
                   "memory measured for both, alternating daemons in this boot")
    p.add_argument("--also", help="another evcapture build (e.g. the shared Swift runtime): start and steady RSS only")
    p.add_argument("--idle-floor", help="a minimal Swift concurrency program (idle-floor) measured the same way")
    a = p.parse_args()
    tmp = os.environ.get("TMPDIR", "/tmp") + "/evc-bench"
    os.makedirs(tmp, exist_ok=True)
    failed = False

    camera = subprocess.Popen([os.environ["EVCAPTURE_FAKEUVC"]], stdout=open(f"{tmp}/fakeuvc.log", "w"),
                              stderr=subprocess.STDOUT)
    node = wait_for("the fake camera's node", lambda: video_node("evcapture fake camera"), 30)
    subprocess.run(["udevadm", "settle", "--timeout=10"])
    flood = subprocess.Popen([a.flood, "5"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    lines = []
    while True:
        line = flood.stdout.readline()
        if not line or line.strip() == "ready":
            break
        lines.append(line.split()[1])
    subprocess.run(["udevadm", "settle", "--timeout=10"])
    log(f"camera {node}; input devices {' '.join(lines)}")

    config = f"{tmp}/bench.toml"
    with open(config, "w") as f:
        f.write(f"""[camera]
device = "{node}"
[handlers.primary]
click = "none"
long-press = "none"
[sound]
play = "off"
[output]
directory = "{tmp}/out"
""")

    # start → READY=1
    times = []
    daemon = None
    for n in range(a.starts):
        d = Daemon(a.evcapture, config, tmp, n)
        try:
            times.append(d.wait_ready())
        except socket.timeout:
            log(f"daemon start {n}: no READY=1 within 30 s; stderr: {open(f'{tmp}/daemon-{n}.err').read()}")
            failed = True
        if n < a.starts - 1:
            d.stop()
        else:
            daemon = d
    if times:
        ms = sorted(t * 1000 for t in times)
        log(f"figure start-to-ready ms: runs={len(ms)} min={ms[0]:.0f} median={ms[len(ms) // 2]:.0f} max={ms[-1]:.0f} "
            f"(all: {', '.join(f'{t:.0f}' for t in (x * 1000 for x in times))})")
    pid = daemon.proc.pid

    # let the start-up settle (with EVCAPTURE_EXECUTOR=dispatch, libdispatch retires idle
    # worker threads ~5 s after their last job), then watch 10 s of nothing
    time.sleep(8)
    before = threads(pid)
    time.sleep(a.idle)
    after = threads(pid)
    woke = []
    for tid, (name, vol, nonvol) in sorted(after.items()):
        b = before.get(tid)
        if b is None:
            woke.append(f"{tid} {name}: new thread")
        elif (vol, nonvol) != b[1:]:
            woke.append(f"{tid} {name}: voluntary {b[1]}→{vol}, involuntary {b[2]}→{nonvol}")
    gone = [f"{tid} {before[tid][0]}: exited" for tid in before if tid not in after]
    log(f"figure idle-wakeups: threads={len(after)} seconds={a.idle:.0f} threads-woken={len(woke) + len(gone)}")
    for w in woke + gone:
        log(f"  {w}")

    if a.idle_floor:
        # the same 10 s for a 6-line Swift program that ran one task and parks: what the
        # Swift runtime itself does while idle (libdispatch on Linux); then the same program
        # on evcapture's MainThreadExecutor (what the daemon runs on)
        for variant, args in (("Swift runtime alone", []), ("MainThreadExecutor", ["main-thread-executor"])):
            floor = subprocess.Popen([a.idle_floor] + args, stdout=subprocess.DEVNULL)
            time.sleep(8)
            fb = threads(floor.pid)
            time.sleep(a.idle)
            fa = threads(floor.pid)
            fw = [f"{tid} {n}: voluntary {fb[tid][1]}→{v}" for tid, (n, v, nv) in sorted(fa.items()) if tid in fb and (v, nv) != fb[tid][1:]]
            log(f"figure idle-wakeups-floor ({variant}): threads={len(fa)} seconds={a.idle:.0f} threads-woken={len(fw)}")
            for w in fw:
                log(f"  {w}")
            floor.kill()
            floor.wait()

    # memory: steady state, then after PRESSES clicks
    rss0 = status_kb(pid, "VmRSS")
    log(f"figure rss-steady kB: {rss0} (anonymous {status_kb(pid, 'RssAnon')}, file-backed {status_kb(pid, 'RssFile')}, "
        f"VmHWM {status_kb(pid, 'VmHWM')}, threads {len(after)})")
    # closed loop: bursts of 8 clicks (32 events: the evdev client buffer holds 64), each
    # written only when the daemon has reported the previous one, so nothing is lost to an
    # overflow and the time is the daemon's own; RSS sampled at every quarter
    began0 = daemon.began
    cpu0, switches0 = cpu_seconds(pid), threads(pid)
    t0 = time.monotonic()
    sent = 0
    samples = []
    quarter = max(1, a.presses // 4)
    while sent < a.presses:
        n = min(8, a.presses - sent)
        flood.stdin.write(f"press {n} 0 0\n")
        flood.stdin.flush()
        flood.stdout.readline()
        sent += n
        if not daemon.wait_began(began0 + sent, 5):
            log(f"  the daemon stopped reporting at {daemon.began - began0} of {sent} clicks")
            break
        if sent % quarter < 8 and sent >= quarter:
            samples.append(f"{sent}: {status_kb(pid, 'VmRSS')}")
    seconds = time.monotonic() - t0
    cpu1, switches1 = cpu_seconds(pid), threads(pid)
    per_thread = []
    for tid, (name, vol, nonvol) in sorted(switches1.items()):
        b = switches0.get(tid, (name, 0, 0))
        per_thread.append(f"{tid} {name} {vol - b[1]}+{nonvol - b[2]}")
    log(f"figure events-cost: {sent} clicks, daemon CPU {(cpu1 - cpu0) * 1000 / max(sent, 1):.2f} ms per click; "
        f"context switches (voluntary+involuntary) per thread: {', '.join(per_thread)}")
    time.sleep(1)
    rss1 = status_kb(pid, "VmRSS")
    seen = daemon.began - began0
    log(f"figure rss-after-events kB: {rss1} after {sent} clicks = {4 * sent} evdev events "
        f"(key down, SYN_REPORT, key up, SYN_REPORT; {2 * sent} capture events expected, {seen} began and "
        f"{daemon.ended} ended seen, {daemon.cancelled} cancelled, {daemon.errors} error lines) in {seconds:.1f} s "
        f"= {seen / seconds:.0f} clicks/s; growth {rss1 - rss0} kB; RSS kB after N clicks: {', '.join(samples)} (anonymous now {status_kb(pid, 'RssAnon')}); VmHWM {status_kb(pid, 'VmHWM')}")
    if seen != sent:
        log(f"  {sent - seen} clicks were not reported")
        failed = True

    status = daemon.stop()
    log(f"daemon exit status {status}")

    # Start → READY=1, private memory (smaps_rollup's Anonymous: heap, stacks, written data
    # pages) and Private_Dirty, steady after READY and after 200 clicks and 10 dial steps, and the
    # threads woken in a.idle seconds of nothing; three daemons per build, the builds alternating.
    builds = [("this build", a.evcapture)] + ([("baseline", a.baseline)] if a.baseline else [])
    rows = {label: [] for label, _ in builds}
    where = {label: [] for label, _ in builds}
    starts = {label: [] for label, _ in builds}
    for n in range(3 * len(builds)):
        label, exe = builds[n % len(builds)]
        d = Daemon(exe, config, tmp, 200 + n)
        starts[label].append(d.wait_ready() * 1000)
        time.sleep(8)
        quiet0 = threads(d.proc.pid)
        time.sleep(a.idle)
        quiet1 = threads(d.proc.pid)
        woken = sum(1 for tid, v in quiet1.items() if tid not in quiet0 or v[1:] != quiet0[tid][1:]) + sum(1 for t in quiet0 if t not in quiet1)
        ready = (rollup_kb(d.proc.pid, "Anonymous"), rollup_kb(d.proc.pid, "Private_Dirty"))
        b0 = d.began
        for _ in range(25):
            flood.stdin.write("press 8 0 0\n")
            flood.stdin.flush()
            flood.stdout.readline()
        flood.stdin.write("dial 10 2000\n")
        flood.stdin.flush()
        flood.stdout.readline()
        d.wait_began(b0 + 200, 10)
        time.sleep(1)
        rows[label].append((ready, (rollup_kb(d.proc.pid, "Anonymous"), rollup_kb(d.proc.pid, "Private_Dirty")), woken, len(quiet1)))
        where[label].append(anonymous_by_mapping(d.proc.pid, exe))
        d.stop()
    for label, _ in builds:
        log(f"figure private-memory ({label}): Anonymous kB (Private_Dirty kB) at READY+8 s → after 200 clicks and 10 dial steps: "
            + ", ".join(f"{r[0]} ({r[1]}) → {x[0]} ({x[1]})" for r, x, _, _ in rows[label]))
        log(f"  private memory by mapping ({label}), kB after the clicks: "
            + "; ".join(", ".join(f"{k} {v}" for k, v in w.items()) for w in where[label]))
        log(f"figure start-to-ready alternating ({label}): ms " + ", ".join(f"{t:.0f}" for t in starts[label]))
        log(f"figure idle-wakeups ({label}): threads woken in {a.idle:.0f} s: "
            + ", ".join(f"{w} of {t}" for _, _, w, t in rows[label]))
    # The peer's private memory in the same boot: µStreamer (Debian's `ustreamer`) serving
    # vivid at 640x480 with no client, three runs (it captures all the time; this daemon has
    # no capture stream here, only the camera's controls).
    ustreamer, vivid = shutil.which("ustreamer"), video_node("vivid-000-vid-cap")
    if ustreamer and vivid:
        peer = []
        for n in range(3):
            u = subprocess.Popen([ustreamer, f"--device={vivid}", "--resolution=640x480", "--host=127.0.0.1", f"--port={18180 + n}"],
                                 stdout=subprocess.DEVNULL, stderr=open(f"{tmp}/ustreamer-{n}.err", "w"))
            time.sleep(8)
            if u.poll() is None:
                peer.append(rollup_kb(u.pid, "Anonymous"))
            u.terminate()
            u.wait(10)
        log(f"figure private-memory (µStreamer on vivid 640x480, no client): Anonymous kB "
            + (", ".join(str(k) for k in peer) if peer else f"none: {open(f'{tmp}/ustreamer-0.err').read()[-300:]}"))
    if a.also:
        times, rss = [], []
        for n in range(3):
            d = Daemon(a.also, config, tmp, 100 + n)
            times.append(d.wait_ready() * 1000)
            time.sleep(8)
            rss.append((status_kb(d.proc.pid, "VmRSS"), status_kb(d.proc.pid, "RssAnon")))
            d.stop()
        log(f"figure also {a.also}: start-to-ready ms {', '.join(f'{t:.0f}' for t in times)}; "
            f"steady VmRSS kB (of it anonymous) {', '.join(f'{r} ({an})' for r, an in rss)}")

    flood.stdin.close()
    flood.wait(10)
    camera.send_signal(signal.SIGTERM)
    camera.wait(10)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
