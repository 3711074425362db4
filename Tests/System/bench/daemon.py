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


def status_kb(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return -1


class Daemon:
    """evcapture run --json with NOTIFY_SOCKET; counts began/ended lines as they come."""

    def __init__(self, exe, config, tmp, n):
        self.sock_path = f"{tmp}/notify-{n}"
        if os.path.exists(self.sock_path):
            os.unlink(self.sock_path)
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.sock_path)
        env = dict(os.environ, NOTIFY_SOCKET=self.sock_path, HOME=tmp, XDG_STATE_HOME=f"{tmp}/state")
        self.started = time.monotonic()
        self.proc = subprocess.Popen([exe, "run", "--json", "--config", config, "--log-level", "warning"],
                                     stdout=subprocess.PIPE, stderr=open(f"{tmp}/daemon-{n}.err", "w"), env=env)
        self.began = self.ended = self.cancelled = self.errors = 0
        self.tail = b""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

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

    def wait_ready(self, timeout=30):
        self.notify.settimeout(timeout)
        while True:
            msg = self.notify.recv(4096)
            if b"READY=1" in msg.split(b"\n"):
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("evcapture")
    p.add_argument("flood")
    p.add_argument("--presses", type=int, default=500_000)
    p.add_argument("--starts", type=int, default=5)
    p.add_argument("--idle", type=float, default=10.0)
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

    # let the camera session and device grabs settle, then watch 10 s of nothing
    time.sleep(3)
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

    # memory: steady state, then after PRESSES clicks
    rss0 = status_kb(pid, "VmRSS")
    log(f"figure rss-steady kB: {rss0} (VmHWM {status_kb(pid, 'VmHWM')}, threads {len(after)})")
    began0 = daemon.began
    t0 = time.monotonic()
    flood.stdin.write(f"press {a.presses} 8 300\n")
    reply = flood.stdout.readline().split()
    wait_for("the daemon to report every press", lambda: daemon.began - began0 >= a.presses and daemon.ended >= daemon.began,
             max(60, a.presses / 1000))
    seconds = time.monotonic() - t0
    time.sleep(1)
    rss1 = status_kb(pid, "VmRSS")
    log(f"figure rss-after-events kB: {rss1} after {a.presses} clicks = {2 * a.presses} key events "
        f"({2 * a.presses} capture events, {daemon.began - began0} began seen, {daemon.cancelled} cancelled, "
        f"{daemon.errors} error lines) in {seconds:.1f} s (writer {reply[2] if len(reply) > 2 else '?'} s); "
        f"growth {rss1 - rss0} kB; VmHWM {status_kb(pid, 'VmHWM')}")

    status = daemon.stop()
    log(f"daemon exit status {status}")
    flood.stdin.close()
    flood.wait(10)
    camera.send_signal(signal.SIGTERM)
    camera.wait(10)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
