#!/usr/bin/env python3
"""Start and memory of several evcapture builds in one test-VM boot (BENCHMARKS.md, "memory" and "start").

Run by footprint.sh in the guest; the builds to compare are EVC_FP_EXES (space-separated
paths). With the fake camera and 5 uinput devices, as daemon.py:
  - 10 rounds, each build once per round (interleaved, so load drifts hit all alike):
    `--help`, and spawn -> READY=1
  - steady RSS (smaps_rollup) 8 s after READY=1, as started, and with transparent huge
    pages off (prctl PR_SET_THP_DISABLE before exec); the largest anonymous mappings
  - the same with the kernel's fault-around at 4 kB instead of 64 kB (debugfs
    fault_around_bytes): the pages the process itself touches, not their neighbours
  - one `strace -f -r -T` of a start per build, into .build-systest/out/fp2-strace-N.txt
"""
import os, subprocess, sys, time, signal, collections, statistics, ctypes
sys.path.insert(0, os.environ["EVC_BENCH_DIR_SRC"])
import daemon as D

libc = ctypes.CDLL(None, use_errno=True)
def no_thp():
    libc.prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE

class Daemon2(D.Daemon):
    """D.Daemon with an optional preexec (THP off)."""
    def __init__(self, exe, config, tmp, n, preexec=None):
        if preexec is None:
            super().__init__(exe, config, tmp, n); return
        orig = subprocess.Popen
        def popen(*a, **k):
            k["preexec_fn"] = preexec
            return orig(*a, **k)
        subprocess.Popen = popen
        try:
            super().__init__(exe, config, tmp, n)
        finally:
            subprocess.Popen = orig

def rollup(pid):
    out = {}
    for line in open(f"/proc/{pid}/smaps_rollup"):
        p = line.split()
        if len(p) >= 2 and p[0].endswith(":") and p[1].isdigit():
            out[p[0][:-1]] = int(p[1])
    return out

def anon_maps(pid, n=6):
    rows = []; cur = None
    for line in open(f"/proc/{pid}/smaps"):
        p = line.split()
        if "-" in p[0] and not p[0].endswith(":"):
            cur = [p[0], p[5] if len(p) >= 6 else "[anon]", 0, 0]
            rows.append(cur)
        elif p[0] == "Anonymous:": cur[2] += int(p[1])
        elif p[0] == "AnonHugePages:": cur[3] += int(p[1])
    rows.sort(key=lambda r: -r[2])
    return "; ".join(f"{r[1].split('/')[-1]} {r[0]} anon {r[2]} huge {r[3]}" for r in rows[:n])

def main():
    exes = os.environ["EVC_FP_EXES"].split()
    tmp = os.environ.get("TMPDIR", "/tmp") + "/evc-fp"; os.makedirs(tmp, exist_ok=True)
    print("fp2 THP", open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip())
    fab = "/sys/kernel/debug/fault_around_bytes"
    print("fp2 fault_around_bytes", open(fab).read().strip() if os.path.exists(fab) else "n/a")
    camera = subprocess.Popen([os.environ["EVCAPTURE_FAKEUVC"]], stdout=open(f"{tmp}/fakeuvc.log", "w"), stderr=subprocess.STDOUT)
    node = D.wait_for("camera", lambda: D.video_node("evcapture fake camera"), 30)
    subprocess.run(["udevadm", "settle", "--timeout=10"])
    flood = subprocess.Popen([os.environ["EVC_FP_FLOOD"], "5"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    while True:
        line = flood.stdout.readline()
        if not line or line.strip() == "ready": break
    subprocess.run(["udevadm", "settle", "--timeout=10"])
    config = f"{tmp}/bench.toml"
    open(config, "w").write(f'[camera]\ndevice = "{node}"\n[handlers.primary]\nclick = "none"\nlong-press = "none"\n[sound]\nplay = "off"\n[output]\ndirectory = "{tmp}/out"\n')
    n = 0
    # interleaved starts: each exe once per round, 10 rounds; --help likewise
    starts = collections.defaultdict(list); helps = collections.defaultdict(list)
    for rnd in range(10):
        for exe in exes:
            t0 = time.monotonic(); subprocess.run([exe, "--help"], stdout=subprocess.DEVNULL); helps[exe].append((time.monotonic() - t0) * 1000)
            n += 1
            d = D.Daemon(exe, config, tmp, n); starts[exe].append(d.wait_ready() * 1000); d.stop()
    for exe in exes:
        s = sorted(starts[exe]); h = sorted(helps[exe])
        print(f"fp2 {exe}: start-to-ready ms min {s[0]:.0f} median {statistics.median(s):.0f} max {s[-1]:.0f}; "
              f"--help ms min {h[0]:.0f} median {statistics.median(h):.0f} max {h[-1]:.0f}", flush=True)
    t = []
    for _ in range(5):
        t0 = time.monotonic(); subprocess.run(["/bin/true"]); t.append((time.monotonic() - t0) * 1000)
    print(f"fp2 /bin/true ms min {min(t):.0f} median {statistics.median(t):.0f}")
    # steady RSS with THP as is, with THP off, and with fault-around off
    def steady(exe, label, preexec=None):
        nonlocal n
        n += 1
        d = Daemon2(exe, config, tmp, n, preexec); d.wait_ready(); time.sleep(8)
        r = rollup(d.proc.pid)
        print(f"fp2 steady {label} {exe}: Rss {r.get('Rss')} kB, Anonymous {r.get('Anonymous')}, AnonHugePages {r.get('AnonHugePages')}, "
              f"file {r.get('Rss', 0) - r.get('Anonymous', 0)}; largest anon: {anon_maps(d.proc.pid)}", flush=True)
        d.stop()
    for exe in exes:
        steady(exe, "thp-default")
        steady(exe, "thp-off", no_thp)
    if os.path.exists(fab):
        open(fab, "w").write("4096")
        print("fp2 fault_around_bytes now", open(fab).read().strip())
        for exe in exes:
            steady(exe, "thp-off+fault-around-4k", no_thp)
        open(fab, "w").write("65536")
    # strace of one start per exe: time stamps relative to exec
    for i, exe in enumerate(exes):
        out = f"{os.environ['EVCAPTURE_REPO']}/.build-systest/out/fp2-strace-{i}.txt"
        sp = f"{tmp}/notify-strace"
        if os.path.exists(sp): os.unlink(sp)
        import socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sp); s.settimeout(60)
        env = dict(os.environ, NOTIFY_SOCKET=sp, HOME=tmp, XDG_STATE_HOME=f"{tmp}/state")
        p = subprocess.Popen(["strace", "-f", "-r", "-T", "-o", out, exe, "run", "--json", "--config", config, "--log-level", "warning"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        t0 = time.monotonic()
        while b"READY=1" not in s.recv(4096).split(b"\n"): pass
        print(f"fp2 strace {exe}: READY after {(time.monotonic()-t0)*1000:.0f} ms under strace -> {out}", flush=True)
        time.sleep(2)
        kids = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
        for k in kids: os.kill(int(k), signal.SIGTERM)
        p.wait(30); s.close()
    flood.stdin.close(); flood.wait(10); camera.send_signal(signal.SIGTERM); camera.wait(10)

main()
