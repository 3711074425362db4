#!/usr/bin/env python3
"""The live view against hostile clients (BENCHMARKS.md: "hostile clients: ...";
docs/live-view.md#security).

Run in the test VM by Tests/System/bench/guest.sh (EVC_BENCH_ONLY=hostile, or as part of
every run). One `evcapture run --json`: vivid as the capture camera (640x480 YUYV at 25 fps,
stream = "always"), `[http]` on 127.0.0.1 with a username and password, the default limits
(max-clients 4), a 16 MB file in the output directory to download.

The owner (the right credentials, from 127.0.0.1) takes /snapshot.jpg over and over, a new
connection each time, 50-150 ms apart: connect -> the last byte of the JPEG. Blocks
alternate in the same boot and the same daemon (emulated timings drift within a boot):
quiet (the owner alone), then one kind of hostile clients beside the owner, then quiet, ...
the kinds in rotating order from round to round. In every hostile block CLIENTS clients of one
kind, each from an address of its own (127.0.1.N), run in another process (`hostile.py load`,
one thread, non-blocking sockets), each starting again as soon as the server closed it:

  pipeline  with the credentials (without them, the first request gets 401 and the
            connection is closed: that is `unauth`), sends GET / requests ahead as fast as
            the socket takes them and reads nothing
  trickle   sends a valid request head a byte every 2 s (slowloris)
  unauth    asks for /snapshot.jpg without credentials and reads the 401, again and again
  noread    with the credentials asks for a download (a 16 MB file; 13 clients), a stream
            (2) or snapshots (1, one more each second) and reads nothing
  guess     wrong credentials, read the 401 (or 429 once its address is backed off), again
            and again

The daemon's private memory (smaps_rollup Private_Clean + Private_Dirty): settled (the lowest
of 5 readings 0.3 s apart) before each hostile block, its peak during (a reading every
0.25 s), settled again after the clients left and the server holds no connection of theirs.

Usage: hostile.py EVCAPTURE [--rounds N] [--block S] [--clients N] [--kinds K,K...] [--clients-idle]
       hostile.py load KIND PORT SECONDS CLIENTS PASSWORD  (the hostile clients alone)
Prints latency lines (`NAME: n=... p50=...us p90=...us p99=...us`) and "figure hostile-..."
lines; exits 1 if something could not be measured.
"""
import argparse
import base64
import json
import os
import random
import select
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recording import p99_ratio, quantile  # noqa: E402
from shutter import Daemon  # noqa: E402
from vivid import set_rate, vivid_node  # noqa: E402

KINDS = ["pipeline", "trickle", "unauth", "noread", "guess"]
USER = "owner"
PASSWORD = "correct horse battery staple"


def log(*a):
    print(*a, flush=True)


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


# --- the hostile clients (`hostile.py load ...`, a process of its own) ---

class Client:
    """One hostile client: its socket, its state, what it has done."""

    def __init__(self, index, kind):
        self.index, self.kind = index, kind
        self.address = f"127.0.1.{index + 1}"
        self.sock = None
        self.out = b""  # bytes still to send
        self.got = b""  # bytes read (unauth, guess)
        self.next_at = 0.0  # trickle: the next byte; noread snapshots: the next request
        self.trickled = 0  # trickle: bytes of the head sent


class Load:
    """CLIENTS clients of one kind on one epoll: the readers (trickle, unauth, guess) wait for
    their answer and the server's close; the others never ask to read (no EPOLLIN: what the
    server sends stays in the kernel's buffers) and see the server's close as EPOLLRDHUP,
    EPOLLHUP or EPOLLERR."""

    def __init__(self, kind, port, clients, password):
        self.kind, self.port, self.password = kind, port, password
        self.poll = select.epoll()
        self.clients = [Client(i, kind) for i in range(clients)]
        self.by_fd = {}
        self.reads = kind in ("trickle", "unauth", "guess")
        self.connections = 0
        self.requests = 0
        self.statuses = {}
        self.closed_by_server = 0
        self.written = 0
        good = basic(USER, password)
        wrong = basic(USER, "wrong " + password)
        self.pipelined = f"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {good}\r\n\r\n".encode() * 64
        self.trickle = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Trickle: " + b"a" * 1000
        self.unauth = b"GET /snapshot.jpg HTTP/1.1\r\nHost: camera\r\n\r\n"
        self.guess = f"GET /snapshot.jpg HTTP/1.1\r\nHost: camera\r\nAuthorization: {wrong}\r\n\r\n".encode()
        self.good = good

    def noread_path(self, c):
        return "/stream.mjpg" if c.index % 8 == 0 else "/snapshot.jpg" if c.index % 16 == 1 else "/media/big.mp4"

    def noread_request(self, c):
        return f"GET {self.noread_path(c)} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {self.good}\r\n\r\n".encode()

    def mask(self, c):
        return (select.EPOLLIN if self.reads else select.EPOLLRDHUP) | (select.EPOLLOUT if c.out else 0)

    def open(self, c, now):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind((c.address, 0))
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        c.sock, c.got, c.next_at = s, b"", 0.0
        self.connections += 1
        if self.kind == "pipeline":
            c.out = self.pipelined
            self.requests += 64
        elif self.kind == "trickle":
            c.out, c.next_at, c.trickled = self.trickle[:1], now + 2, 1
        elif self.kind == "unauth":
            c.out = self.unauth
            self.requests += 1
        elif self.kind == "guess":
            c.out = self.guess
            self.requests += 1
        else:
            c.out = self.noread_request(c)
            self.requests += 1
            if self.noread_path(c) == "/snapshot.jpg":
                c.next_at = now + 1
        self.by_fd[s.fileno()] = c
        self.poll.register(s.fileno(), self.mask(c))

    def drop(self, c, by_server):
        self.poll.unregister(c.sock.fileno())
        del self.by_fd[c.sock.fileno()]
        c.sock.close()
        c.sock = None
        if by_server:
            self.closed_by_server += 1
        if c.got.startswith(b"HTTP/1.1 "):
            status = c.got[9:12].decode(errors="replace")
            self.statuses[status] = self.statuses.get(status, 0) + 1

    def run(self, seconds):
        now = time.monotonic()
        end = now + seconds
        for c in self.clients:
            self.open(c, now)
        closing = select.EPOLLERR | select.EPOLLHUP | select.EPOLLRDHUP
        while True:
            now = time.monotonic()
            if now >= end:
                break
            timeout = min([end - now] + [max(0, c.next_at - now) for c in self.clients if c.sock and c.next_at])
            for fd, ev in self.poll.poll(timeout):
                c = self.by_fd.get(fd)
                if c is None:
                    continue
                try:
                    if self.reads and ev & (select.EPOLLIN | closing):
                        data = c.sock.recv(65536)
                        if not data:
                            self.drop(c, True)
                            continue
                        c.got += data[: max(0, 64 - len(c.got))]
                    elif not self.reads and ev & closing:
                        self.drop(c, True)
                        continue
                    if ev & select.EPOLLOUT and c.out:
                        sent = c.sock.send(c.out)
                        self.written += sent
                        c.out = c.out[sent:]
                        if self.kind == "pipeline" and not c.out:
                            c.out = self.pipelined
                            self.requests += 64
                        if not c.out:
                            self.poll.modify(fd, self.mask(c))
                except BlockingIOError:
                    pass
                except OSError:
                    self.drop(c, True)
            now = time.monotonic()
            for c in self.clients:
                if c.sock is None:
                    self.open(c, now)  # again at once
                elif c.next_at and now >= c.next_at:
                    if self.kind == "trickle":  # the next byte of a valid head, every 2 s
                        c.out += self.trickle[c.trickled:c.trickled + 1]
                        c.trickled += 1
                        c.next_at = now + 2
                    else:  # noread snapshots: one more asked for each second, none read
                        c.out += self.noread_request(c)
                        self.requests += 1
                        c.next_at = now + 1
                    self.poll.modify(c.sock.fileno(), self.mask(c))
        for c in self.clients:
            if c.sock is not None:
                self.drop(c, False)
        return {"kind": self.kind, "seconds": seconds, "connections": self.connections, "requests": self.requests,
                "closed_by_server": self.closed_by_server, "written": self.written, "statuses": self.statuses}


def load_main(argv):
    kind, port, seconds, clients, password = argv[0], int(argv[1]), float(argv[2]), int(argv[3]), argv[4]
    if kind not in KINDS:
        raise SystemExit(f"hostile.py load: unknown kind {kind!r}, expected one of {', '.join(KINDS)}")
    print(json.dumps(Load(kind, port, clients, password).run(seconds)), flush=True)
    return 0


# --- the measurement ---

def private_kb(pid):
    """Private_Clean + Private_Dirty of /proc/PID/smaps_rollup, in kB."""
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1])
    return total


def anonymous_kb(pid):
    """Anonymous of /proc/PID/smaps_rollup: the part of the private memory that is not the
    executable's and libraries' own pages (their code, read in as it first runs)."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Anonymous:"):
                return int(line.split()[1])
    return -1


def settled_kb(pid):
    """The lowest of a few readings (private, anonymous): the memory with nothing in flight."""
    lowest = None
    for _ in range(5):
        kb = (private_kb(pid), anonymous_kb(pid))
        lowest = kb if lowest is None else (min(lowest[0], kb[0]), min(lowest[1], kb[1]))
        time.sleep(0.3)
    return lowest


def server_connections(port):
    """The server's established (or half-closed, not yet closed by it) connections on port."""
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state = fields[1], fields[3]
            if int(local.rsplit(":", 1)[1], 16) == port and state in ("01", "08"):
                n += 1
    return n


class Owner:
    """The owner's snapshots: connect -> the JPEG's last byte, a new connection each time."""

    def __init__(self, port):
        self.port = port
        self.request = (f"GET /snapshot.jpg HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: {basic(USER, PASSWORD)}\r\n"
                        "Connection: close\r\n\r\n").encode()

    def snapshot(self, timeout=20):
        """(seconds, status); status 0 when it failed without one."""
        start = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
                s.sendall(self.request)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                status = int(head[9:12]) if head.startswith(b"HTTP/1.1 ") else 0
                length = None
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while length is None or len(body) < length:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    body += chunk
                if length is not None and len(body) < length:
                    status = 0
        except OSError:
            return time.monotonic() - start, 0
        return time.monotonic() - start, status


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "load":
        return load_main(sys.argv[2:])
    p = argparse.ArgumentParser()
    p.add_argument("evcapture")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--block", type=float, default=12, help="seconds per block")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--port", type=int, default=18190)
    p.add_argument("--clients-idle", action="store_true",
                   help="the hostile clients' process under SCHED_IDLE: it runs only when the daemon and the owner leave "
                   "the CPU free (separates their CPU from the daemon's on the VM's one CPU)")
    a = p.parse_args()
    kinds = a.kinds.split(",")
    for k in kinds:
        if k not in KINDS:
            raise SystemExit(f"hostile.py: unknown kind {k!r} in --kinds, expected some of {', '.join(KINDS)}")
    tmp = os.environ.get("TMPDIR", "/tmp") + "/evc-bench-hostile"
    os.makedirs(tmp + "/out", exist_ok=True)
    with open(tmp + "/out/big.mp4", "wb") as f:
        f.truncate(16 << 20)

    vivid = vivid_node()
    if not vivid:
        raise SystemExit("hostile.py: no vivid")
    set_rate(vivid, 25)
    config = f"{tmp}/hostile.toml"
    with open(config, "w") as f:
        f.write(f"""[camera]
device = "none"
capture-device = "{vivid}"
width = 640
height = 480
stream = "always"
[handlers.primary]
click = "photo"
[sound]
play = "off"
[output]
directory = "{tmp}/out"
[http]
listen = "127.0.0.1:{a.port}"
username = "{USER}"
password = "{PASSWORD}"
""")
    d = Daemon(a.evcapture, config, tmp, "hostile")
    d.wait_ready()
    pid = d.proc.pid
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", a.port), timeout=2).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"hostile.py: nothing listens on {a.port}: {open(d.err_path).read()[-2000:]}")
            time.sleep(0.2)
    owner = Owner(a.port)
    log(f"vivid {vivid} at 25 fps, daemon {pid} on 127.0.0.1:{a.port}, {a.clients} clients per kind"
        f"{' (SCHED_IDLE)' if a.clients_idle else ''}, {a.rounds} rounds of {a.block:.0f} s blocks")

    # Warm up for a block: the snapshot path's buffers made and the ring's filled once.
    end = time.monotonic() + a.block
    while time.monotonic() < end:
        owner.snapshot()
        time.sleep(random.uniform(0.05, 0.15))
    baseline, baseline_anon = settled_kb(pid)
    log(f"private memory at the start (after a block of snapshots): {baseline} kB (anonymous {baseline_anon} kB)")

    quiet_blocks = []  # [latencies] of each quiet block, in order
    hostile = {k: {"lat": [], "failed": 0, "n": 0, "quiet_neighbours": [], "memory": [], "anonymous": [], "loads": []} for k in kinds}
    failures = {"quiet": 0}

    def owner_block(seconds, stop=None):
        lat, failed = [], 0
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (stop and stop.is_set()):
            took, status = owner.snapshot()
            if status == 200:
                lat.append(took)
            else:
                failed += 1
                log(f"  owner snapshot: status {status} after {took * 1000:.0f} ms")
            time.sleep(random.uniform(0.05, 0.15))
        return lat, failed

    def quiet():
        lat, failed = owner_block(a.block)
        quiet_blocks.append(lat)
        failures["quiet"] += failed

    status = 0
    quiet()
    for rnd in range(a.rounds):
        order = kinds[rnd % len(kinds):] + kinds[:rnd % len(kinds)]
        for kind in order:
            h = hostile[kind]
            before, before_anon = settled_kb(pid)
            peak = [before]
            sampling = threading.Event()

            def sample():
                while not sampling.is_set():
                    try:
                        peak[0] = max(peak[0], private_kb(pid))
                    except OSError:
                        return
                    time.sleep(0.25)
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            load = subprocess.Popen([sys.executable, os.path.abspath(__file__), "load", kind, str(a.port), str(a.block + 1),
                                     str(a.clients), PASSWORD], stdout=subprocess.PIPE, text=True,
                                    preexec_fn=(lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)))
                                    if a.clients_idle else None)
            time.sleep(1)  # the clients connected and at it
            lat, failed = owner_block(a.block)
            out, _ = load.communicate(timeout=60)
            sampling.set()
            sampler.join()
            try:
                stats = json.loads(out.strip().splitlines()[-1])
            except (ValueError, IndexError):
                log(f"hostile.py: the {kind} clients printed no result: {out!r}")
                stats, status = {}, 1
            # The clients are gone: the server lets go of their connections.
            gone = time.monotonic() + 40
            while server_connections(a.port) > 0 and time.monotonic() < gone:
                time.sleep(0.2)
            left = server_connections(a.port)
            waited = time.monotonic() - (gone - 40)
            time.sleep(1)
            after, after_anon = settled_kb(pid)
            h["lat"] += lat
            h["failed"] += failed
            h["n"] += len(lat) + failed
            h["memory"].append((before, peak[0], after))
            h["anonymous"].append((before_anon, after_anon))
            h["loads"].append(stats)
            log(f"round {rnd} {kind}: owner n={len(lat)} failed={failed} p99={quantile(lat, 0.99) * 1000:.1f} ms"
                if lat else f"round {rnd} {kind}: owner n=0 failed={failed}")
            log(f"round {rnd} {kind}: memory before {before} kB, peak {peak[0]} kB, after {after} kB "
                f"(anonymous {before_anon} -> {after_anon} kB) "
                f"(server connections {left} after {waited:.1f} s); clients {json.dumps(stats)}")
            if left:
                status = 1
            quiet()
            h["quiet_neighbours"] += [len(quiet_blocks) - 2, len(quiet_blocks) - 1]
    end_kb, end_anon = settled_kb(pid)
    d_status = d.stop()
    set_rate(vivid, 5)

    all_quiet = [x for b in quiet_blocks for x in b]
    if all_quiet:
        q = [x * 1e6 for x in all_quiet]
        log(f"quiet owner snapshot: n={len(q)} p50={quantile(q, 0.5):.0f}us p90={quantile(q, 0.9):.0f}us "
            f"p99={quantile(q, 0.99):.0f}us max={max(q):.0f}us")
    for kind in kinds:
        h = hostile[kind]
        quiet_lat = [x for i in sorted(set(h["quiet_neighbours"])) for x in quiet_blocks[i]]
        if h["lat"]:
            us = [x * 1e6 for x in h["lat"]]
            log(f"{kind} owner snapshot: n={len(us)} p50={quantile(us, 0.5):.0f}us p90={quantile(us, 0.9):.0f}us "
                f"p99={quantile(us, 0.99):.0f}us max={max(us):.0f}us")
        if h["lat"] and quiet_lat:
            r, lo, hi = p99_ratio(h["lat"], quiet_lat)
            log(f"figure hostile-owner {kind}: p99={quantile(h['lat'], 0.99) * 1000:.1f} ms p50={quantile(h['lat'], 0.5) * 1000:.1f} ms "
                f"quiet p99={quantile(quiet_lat, 0.99) * 1000:.1f} ms p50={quantile(quiet_lat, 0.5) * 1000:.1f} ms "
                f"ratio={r:.2f} interval={lo:.2f}-{hi:.2f} n={len(h['lat'])}/{len(quiet_lat)} failed={h['failed']}")
        else:
            log(f"hostile.py: no owner snapshots for {kind}")
            status = 1
        mem = h["memory"]
        worst = max(mem, key=lambda m: m[2] - m[0])
        conns = sum(s.get("connections", 0) for s in h["loads"])
        reqs = sum(s.get("requests", 0) for s in h["loads"])
        seconds = sum(s.get("seconds", 0) for s in h["loads"])
        statuses = {}
        for s in h["loads"]:
            for k, v in s.get("statuses", {}).items():
                statuses[k] = statuses.get(k, 0) + v
        log(f"figure hostile-memory {kind}: before={worst[0]} kB peak={max(m[1] for m in mem)} kB after={worst[2]} kB "
            f"growth={worst[2] - worst[0]:+d} kB (worst of {len(mem)} blocks; before/peak/after "
            f"{', '.join(f'{b}/{p}/{x}' for b, p, x in mem)}; anonymous before/after "
            f"{', '.join(f'{b}/{x}' for b, x in h['anonymous'])}) clients={a.clients} "
            f"connections={conns / max(seconds, 1):.1f}/s requests={reqs / max(seconds, 1):.0f}/s "
            f"written={sum(s.get('written', 0) for s in h['loads']) / max(seconds, 1) / 1024:.0f}kB/s "
            f"statuses={json.dumps(statuses, sort_keys=True)}")
    log(f"figure hostile-memory all: start={baseline} kB end={end_kb} kB growth={end_kb - baseline:+d} kB "
        f"(anonymous {baseline_anon} -> {end_anon} kB, {end_anon - baseline_anon:+d}; {a.rounds} rounds of {len(kinds)} kinds)")
    if failures["quiet"]:
        log(f"hostile.py: {failures['quiet']} owner snapshots failed in quiet blocks")
    if d_status != 0:
        log(f"hostile.py: daemon exit status {d_status}: {open(d.err_path).read()[-2000:]}")
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
