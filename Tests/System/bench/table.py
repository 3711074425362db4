#!/usr/bin/env python3
"""The figures of one or more Tests/System/bench/run logs as BENCHMARKS.md's table rows, each
checked against its threshold.

usage: Tests/System/bench/table.py LOG... [--markdown]

Reads the lines the bench prints (`NAME: n=… p50=…us p99=…us …` under `bench: === … ===`
headers, and `figure …` lines), judges every figure against the floor measured in the same
boot (or a fixed limit), and, when the run had a baseline build (EVC_BENCH_BASELINE_DIR),
compares this build with it. Prints one line per figure (or markdown table rows with
--markdown); exits 1 when a threshold is missed, 2 when a log holds none of the figures.
"""
import re
import sys

LATENCY = re.compile(r"^(?P<what>[^:]+): n=(?P<n>\d+) p50=(?P<p50>[\d.]+)us p90=[\d.]+us p99=(?P<p99>[\d.]+)us")
SECTION = re.compile(r"^bench: === (?P<name>.*) ===$")

# Not worse than the baseline: within 10 % and 20 µs of its p99 (two runs of the same
# build differ by that much in the emulated VM, whose timings drift within a boot).
def not_worse(this, base):
    return this <= base * 1.1 + 20


def parse(paths):
    """Every latency report as (section, what, p50, p99), and every `figure` line."""
    reports, figures = [], []
    for path in paths:
        section = ""
        for raw in open(path, errors="replace"):
            line = raw.strip()
            m = SECTION.match(line)
            if m:
                section = m["name"]
                continue
            m = LATENCY.match(line)
            if m:
                reports.append((section, m["what"].strip(), float(m["p50"]), float(m["p99"])))
                continue
            i = line.find("figure ")
            if i >= 0:
                figures.append(line[i + len("figure "):])
    return reports, figures


def p99s(reports, section, what):
    return [(p50, p99) for s, w, p50, p99 in reports if s == section and w == what]


def rows(reports, figures):
    """(measurement, value, threshold, verdict) for every figure found."""
    out = []
    floors = [p99 for s, w, _, p99 in reports if w == "floor press"]
    floor = max(floors) if floors else None

    def latency(name, section, base_section):
        this = p99s(reports, section, "evcapture press")
        if not this or floor is None:
            return
        p50, p99 = this[-1]
        limit = 1.5 * floor + 50
        verdict = "met" if p99 <= limit else "missed"
        value = f"p99 {p99:.0f} µs (p50 {p50:.0f}); floor p99 {floor:.0f} µs (worst of {len(floors)})"
        base = p99s(reports, base_section, "evcapture press")
        if base:
            b50, b99 = base[-1]
            value += f"; baseline p99 {b99:.0f} µs (p50 {b50:.0f})"
            if not not_worse(p99, b99):
                verdict = "missed (worse than the baseline)"
        out.append((name, value, f"≤ 1.5 × floor + 50 µs ({limit:.0f} µs)", verdict))

    latency("press: uinput write → pipeline output on the I/O thread",
            "input latency: evcapture, pipeline output on the I/O thread (the daemon's path)",
            "input latency: baseline, pipeline output on the I/O thread")
    latency("dispatcher: uinput write → CaptureDispatcher handler", "input latency: evcapture", "input latency: baseline")

    knob = [p99 for s, w, _, p99 in reports if w == "knob step → set entered (ioctls issued)"]
    knob_floor = [p99 for s, w, _, p99 in reports if w == "floor knob step → S_EXT_CTRLS issued"]
    if knob:
        # with a baseline the knob section runs: floor, this, floor, baseline, floor, this
        this = [knob[0]] + ([knob[2]] if len(knob) >= 3 else [])
        value = f"p99 {max(this):.0f} µs (worst of {len(this)} runs)"
        if knob_floor:
            value += f"; floor issued p99 {max(knob_floor):.0f} µs"
        verdict = "met" if max(this) <= 1000 else "missed"
        if len(knob) >= 3:
            value += f"; baseline p99 {knob[1]:.0f} µs"
            if not not_worse(min(this), knob[1]):
                verdict = "missed (worse than the baseline)"
        out.append(("knob: knob step → VIDIOC_S_EXT_CTRLS issued (fake UVC camera)", value, "≤ 1 ms", verdict))

    for f in figures:
        m = re.match(r"idle-wakeups \((?P<who>[^)]+)\): threads woken in (?P<s>\d+) s: (?P<runs>.*)$", f)
        if m:
            woken = [int(x.split(" of ")[0]) for x in m["runs"].split(", ")]
            out.append((f"idle: threads woken in {m['s']} s, 5 devices + camera ({m['who']})", ", ".join(m["runs"].split(", ")),
                        "none", "met" if max(woken) == 0 else "missed"))
        m = re.match(r"private-memory \((?P<who>[^)]+)\): .*?: (?P<runs>.*)$", f)
        if m:
            after = [int(r.split("→")[1].split("(")[0]) for r in m["runs"].split(", ")]
            out.append((f"private memory (smaps_rollup Anonymous) after presses and a dial turn ({m['who']})",
                        f"{max(after)} kB (runs: {', '.join(str(a) for a in after)})", "≤ 12 MB",
                        "met" if max(after) <= 12 * 1024 else "missed"))
        # booths (booth.py)
        m = re.match(r"booth gpio-edge: p99 \|edge - frame_time\| (?P<edge>[\d.]+) ms \(p50 (?P<p50>[\d.]+), max (?P<max>[\d.]+)\), "
                     r"p99 \|pin - frame_time\| (?P<pin>[\d.]+) ms .*frame interval (?P<frame>[\d.]+) ms; (?P<shots>\d+) shots, "
                     r"(?P<missed>\d+) missed, (?P<unmatched>\d+) without", f)
        if m:
            ok = float(m["edge"]) <= float(m["frame"]) and m["unmatched"] == "0"
            out.append(("booth: timelapse shot → GPIO edge read back (emulated CP2112, kernel line-event time) against the photo's frame_time",
                        f"p99 {m['edge']} ms (p50 {m['p50']}, max {m['max']}); at the chip p99 {m['pin']} ms; "
                        f"{m['shots']} shots, {m['missed']} missed, {m['unmatched']} without a pulse",
                        f"≤ 1 frame interval ({m['frame']} ms), p99", "met" if ok else "missed"))
        m = re.match(r"booth gpio-latency: pin - shot moment p50 (?P<p50>[-\d.]+) p99 (?P<p99>[-\d.]+) max [-\d.]+ ms; "
                     r"floor p50 (?P<f50>[-\d.]+) p99 (?P<f99>[-\d.]+)", f)
        if m:
            limit = float(m["f99"]) + 5
            out.append(("booth: shot's moment → GPIO level at the chip (emulated CP2112), against a C program's timed write",
                        f"p99 {m['p99']} ms (p50 {m['p50']}); floor p99 {m['f99']} ms (p50 {m['f50']})",
                        f"≤ floor p99 + 5 ms ({limit:.1f} ms)", "met" if float(m["p99"]) <= limit else "missed"))
        m = re.match(r"booth timelapse-drift: (?P<shots>\d+) shots every (?P<iv>[\d.]+) s, (?P<missed>\d+) missed: "
                     r"max \|frame_time - \(start \+ n x interval\)\| (?P<max>[\d.]+) ms, half a frame interval (?P<half>[\d.]+) ms; "
                     r"mean offset shots 1-10 (?P<first>[-+\d.]+) ms, last 10 (?P<last>[-+\d.]+) ms", f)
        if m:
            ok = float(m["max"]) <= float(m["half"]) and m["missed"] == "0"
            out.append((f"booth: timelapse drift, {m['shots']} shots every {m['iv']} s on vivid: frame_time against start + n × interval",
                        f"max {m['max']} ms; mean offset shots 1–10 {m['first']} ms, last 10 {m['last']} ms; {m['missed']} missed",
                        f"every shot ≤ ½ frame interval ({m['half']} ms)", "met" if ok else "missed"))
        m = re.match(r"start-to-ready ms: .*median=(?P<median>\d+)", f)
        if m:
            out.append(("start: exec → READY=1, median", f"{m['median']} ms", "≤ 150 ms",
                        "met" if int(m["median"]) <= 150 else "missed"))
    out += video_rows(reports, figures)
    out += libcamera_rows(figures)
    out += hostile_rows(figures)
    out += mjpeg_rows(figures)
    out += webrtc_rows(figures)
    return out


HOSTILE_KINDS = {
    "pipeline": "pipelining without reading (with the credentials)",
    "trickle": "trickling a request head, a byte every 2 s",
    "unauth": "collecting 401s without credentials",
    "noread": "downloads, streams and snapshots never read (with the credentials)",
    "guess": "guessing the password",
}


def hostile_rows(figures):
    """The live view against hostile clients (the VM, hostile.py): the owner's snapshot p99
    beside each kind against the quiet blocks around it, and the daemon's private memory
    before, during and after them."""
    out = []
    for f in figures:
        m = re.match(r"hostile-owner (?P<kind>\w+): p99=(?P<p99>[\d.]+) ms p50=(?P<p50>[\d.]+) ms quiet p99=(?P<q99>[\d.]+) ms "
                     r"p50=(?P<q50>[\d.]+) ms ratio=(?P<r>[\d.]+) interval=(?P<lo>[\d.]+)-(?P<hi>[\d.]+) n=(?P<n>\S+) "
                     r"failed=(?P<failed>\d+)", f)
        if m:
            ok = float(m["r"]) <= 2 and m["failed"] == "0"
            out.append((f"hostile: the owner's snapshot p99 beside 16 clients {HOSTILE_KINDS.get(m['kind'], m['kind'])}, "
                        "against quiet blocks (VM, alternating)",
                        f"p99 {m['p99']} ms (p50 {m['p50']}); quiet p99 {m['q99']} ms (p50 {m['q50']}); ratio {m['r']}, "
                        f"90 % interval {m['lo']}–{m['hi']}; n {m['n']}; {m['failed']} failed",
                        "≤ 2 × quiet, none failed", "met" if ok else "missed"))
        m = re.match(r"hostile-memory (?P<kind>\w+): before=(?P<before>\d+) kB peak=(?P<peak>\d+) kB after=(?P<after>\d+) kB "
                     r"growth=(?P<growth>[-+]\d+) kB \((?P<rest>[^)]*)\) (?P<load>.*)$", f)
        if m:
            ok = int(m["growth"]) <= 1024
            out.append((f"hostile: private memory before, during and after 16 clients {HOSTILE_KINDS.get(m['kind'], m['kind'])} (VM)",
                        f"{m['before']} → peak {m['peak']} → {m['after']} kB ({m['growth']} kB; {m['rest']}); {m['load']}",
                        "after ≤ before + 1 MB", "met" if ok else "missed"))
        m = re.match(r"hostile-memory all: start=(?P<start>\d+) kB end=(?P<end>\d+) kB growth=(?P<growth>[-+]\d+) kB", f)
        if m:
            out.append(("hostile: private memory at the start and after every block (VM)",
                        f"{m['start']} → {m['end']} kB ({m['growth']} kB)", "≤ start + 1 MB",
                        "met" if int(m["growth"]) <= 1024 else "missed"))
    return out


def mjpeg_rows(figures):
    """The MJPEG live view against µStreamer (the VM, ustreamer.py): CPU per viewer-second and
    frame -> last byte p99 at N viewers, alternating blocks on one camera."""
    out = []
    for f in figures:
        m = re.match(r"mjpeg-compare (?P<cam>\w+) (?P<n>\d+): cpu evcapture=(?P<ce>[\d.]+) ustreamer=(?P<cu>[\d.]+) ms cpu-ratio=(?P<cr>[\d.]+) "
                     r"p99 evcapture=(?P<pe>[\d.]+) ustreamer=(?P<pu>[\d.]+) ms difference=(?P<d>[-+][\d.]+) ms "
                     r"p99-ratio=(?P<r>-?[\d.]+) interval=(?P<lo>-?[\d.]+)-(?P<hi>-?[\d.]+) n=(?P<cnt>\S+)", f)
        if m:
            ok = float(m["ce"]) <= float(m["cu"]) and float(m["d"]) <= 2
            camera = ("vivid 640×480 YUYV 5 fps, both encoding" if m["cam"] == "yuyv" else
                      "v4l2loopback 640×480 MJPEG 5 fps, both passing it through")
            out.append((f"mjpeg: the live view against µStreamer, {m['n']} viewer(s), {camera} (VM, alternating)",
                        f"CPU {m['ce']} against {m['cu']} ms per viewer-second ({m['cr']}×); frame → last byte p99 "
                        f"{m['pe']} against {m['pu']} ms ({m['d']} ms; ratio {m['r']}, 90 % interval {m['lo']}–{m['hi']}); "
                        f"parts {m['cnt']}",
                        "CPU ≤ µStreamer's, p99 ≤ µStreamer's + 2 ms", "met" if ok else "missed"))
    return out


def webrtc_rows(figures):
    """The page's WebRTC against MJPEG of the same frames (the VM, webrtc.py): bytes per
    viewer-second, alternating blocks; Chromium's own delays, without a threshold."""
    out = []
    for f in figures:
        m = re.match(r"webrtc-bandwidth (?P<size>\d+x\d+): webrtc=(?P<w>[\d.]+) mjpeg=(?P<m>[\d.]+) kB/s ratio=(?P<r>[\d.]+) "
                     r"fps webrtc=(?P<fw>[\d.]+) mjpeg=(?P<fm>[\d.]+) n=(?P<n>\S+)", f)
        if m:
            # The same frames only when both got them at the same rate: bytes per second say
            # nothing when one side got fewer frames (a saturated VM), so the verdict is per frame
            # and needs the rates within 10 % of each other.
            fw, fm = float(m["fw"]), float(m["fm"])
            same = fw > 0 and fm > 0 and abs(fw - fm) <= 0.1 * max(fw, fm)
            per_frame = (float(m["w"]) / fw) / (float(m["m"]) / fm) if fw > 0 and fm > 0 and float(m["m"]) > 0 else float("nan")
            verdict = ("met" if per_frame <= 0.25 else "missed") if same else "not comparable (frame rates differ)"
            out.append((f"webrtc: bytes per viewer-second against MJPEG of the same frames, vivid {m['size'].replace('x', '×')} "
                        "5 fps, one viewer (VM, alternating)",
                        f"{m['w']} against {m['m']} kB/s (ratio {m['r']}, per frame {per_frame:.3f}); frames/s {fw} and {fm}; blocks {m['n']}",
                        "≤ ¼ of MJPEG per frame, at the same frame rate", verdict))
        m = re.match(r"webrtc-delay (?P<size>\d+x\d+): jitter-buffer=(?P<j>[\d.na]+) ms processing=(?P<p>[\d.na]+) ms "
                     r"decode=(?P<d>[\d.na]+) ms dropped=(?P<dr>\d+) frames=(?P<fr>\d+)", f)
        if m:
            out.append((f"webrtc: Chromium's own delays (getStats), vivid {m['size'].replace('x', '×')} 5 fps (VM)",
                        f"jitter buffer {m['j']} ms, first packet → decoded {m['p']} ms, decode {m['d']} ms per frame; "
                        f"{m['dr']} dropped of {m['fr']}", "reported", "reported"))
        m = re.match(r"webrtc-rtp (?P<size>\d+x\d+): last p50=(?P<l50>[\d.]+) p99=(?P<l99>[\d.]+) max=(?P<lmax>[\d.]+) ms "
                     r"first p50=(?P<f50>[\d.]+) p99=(?P<f99>[\d.]+) ms matched=(?P<matched>\S+) "
                     r"ambiguous-blocks=(?P<amb>\d+) interval=(?P<i>[\d.]+) ms dequeue-to-last p50=(?P<d50>[\d.]+) "
                     r"p99=(?P<d99>[\d.]+) ms timestamp-ahead-of-dequeue p50=(?P<ahead>[-\d.]+) ms", f)
        if m:
            # The verdict on the time from the daemon's dequeue: a driver may stamp a frame's
            # end before it hands the frame over (vivid's stamps are ahead of the dequeue).
            out.append((f"webrtc: frame → its last RTP packet sent, vivid {m['size'].replace('x', '×')} 5 fps (VM)",
                        f"from the dequeue p99 {m['d99']} ms (p50 {m['d50']}); from the kernel timestamp p99 {m['l99']} ms "
                        f"(p50 {m['l50']}, max {m['lmax']}; first packet p99 {m['f99']}), the timestamps {m['ahead']} ms "
                        f"ahead of the dequeue (p50); frames matched {m['matched']}, blocks with more than one fitting offset {m['amb']}",
                        f"≤ one frame interval ({m['i']} ms), p99 from the dequeue",
                        "met" if float(m["d99"]) <= float(m["i"]) and m["amb"] == "0" else "missed"))
    return out


def libcamera_rows(figures):
    """The camera through libcamera on vimc (the VM, libcamera.py): shutter lag in frame
    intervals, and CPU per streaming second against libcamera's own cam."""
    out = []
    for f in figures:
        m = re.match(r"libcamera shutter-lag: \|frame_time - began\| n=(?P<n>\d+) median (?P<med>[\d.]+) p90 [\d.]+ "
                     r"max (?P<max>[\d.]+) ms = max (?P<maxiv>[\d.]+) \(median (?P<mediv>[\d.]+)\) frame intervals of "
                     r"(?P<iv>[\d.]+) ms; nearest frame (?P<near>\d+) of (?P<of>\d+); failed (?P<failed>\d+) of (?P<clicks>\d+) clicks"
                     r"(?:.*of the gap around the press max (?P<gap>[\d.]+|nan) of (?P<gapn>\d+) clicks)?", f)
        if m:
            # vimc's frames come unevenly under emulation, so "half a frame interval" is judged
            # against the gap the press fell in (for an even camera, the frame interval): the
            # photo must be the dequeued frame nearest the press, every click. The lag against
            # the mean interval is reported beside it.
            gap = float(m["gap"]) if m["gap"] and m["gap"] != "nan" else None
            ok = (gap is not None and gap <= 0.5 and m["gapn"] == m["n"] and m["near"] == m["of"] == m["n"]
                  and m["failed"] == "0")
            out.append(("libcamera: shutter lag |photo frame_time − press began| on vimc 360×240 through libcamera (VM)",
                        f"max {gap if gap is not None else '?'} of the gap between the frames around the press; "
                        f"max {m['max']} ms = {m['maxiv']} mean frame intervals (median {m['med']} ms = {m['mediv']}); "
                        f"frame interval {m['iv']} ms; {m['n']} clicks, {m['near']} the frame nearest the press, {m['failed']} failed",
                        "≤ ½ the frame gap around the press and the nearest frame, every click", "met" if ok else "missed"))
        m = re.match(r"libcamera stream-cpu: evcapture (?P<ev>[\d.]+) ms/s at (?P<evfps>[\d.]+) fps, "
                     r"cam (?P<cam>[\d.]+) ms/s at (?P<camfps>[\d.]+) fps, ratio (?P<r>[\d.]+); (?P<blocks>.*)$", f)
        if m:
            ok = float(m["r"]) <= 1.2 and float(m["evfps"]) >= 0.9 * float(m["camfps"])
            out.append(("libcamera: CPU per streaming second, evcapture's daemon (stream = \"always\") against libcamera's "
                        "cam -C, vimc 360×240 same format (VM, alternating blocks)",
                        f"{m['ev']} ms/s at {m['evfps']} fps; cam {m['cam']} ms/s at {m['camfps']} fps ({m['r']}×; {m['blocks']})",
                        "≤ 1.2 × cam, at ≥ 0.9 × cam's frame rate", "met" if ok else "missed"))
    return out


def video_rows(reports, figures):
    """Video: encode CPU against the ffmpeg CLI and file sizes (host), and input latency while
    a recording runs against idle, with the frames it dropped (the VM, recording.py)."""
    out = []
    for f in figures:
        m = re.match(r"video-encode (?P<size>\d+x\d+): evcapture=(?P<ours>\d+) ms ffmpeg=(?P<theirs>\d+) ms", f)
        if m:
            ours, theirs = int(m["ours"]), int(m["theirs"])
            out.append((f"video encode: CPU per second of {m['size']} 30 fps H.264 (libx264 veryfast CRF 23), evcapture's writer "
                        "against the ffmpeg CLI (host)", f"{ours} ms (ffmpeg {theirs} ms)", "≤ 1.1 × ffmpeg",
                        "met" if ours <= 1.1 * theirs else "missed"))
        m = re.match(r"video-size (?P<size>\d+x\d+): mp4=(?P<mp4>[\d.]+) MiB/min avi=(?P<avi>[\d.]+) MiB/min ratio=(?P<r>\d+)", f)
        if m:
            out.append((f"video size per minute, {m['size']} 30 fps: H.264 MP4 against MJPEG AVI of the same frames (host)",
                        f"MP4 {m['mp4']} MiB, AVI {m['avi']} MiB ({m['r']}×)", "reported", "reported"))
        m = re.match(r"recording-frames (?P<what>\S+): (?P<rest>.*)$", f)
        if m:
            out.append((f"recording: frames dropped while recording vivid {m['what']} (VM)", m["rest"], "reported", "reported"))
    out += busy_latency_rows(reports, figures, "recording:", "recording-p99", "recording", "while a video records")
    out += busy_latency_rows(reports, figures, "webrtc-viewers:", r"webrtc-viewers-p99 \d+", "webrtc",
                             "with 4 WebRTC viewers (Chromium in the guest)")
    return out


def busy_latency_rows(reports, figures, section_name, figure, busy, label):
    """Press and knob p99 in a section's busy blocks against its idle ones (≤ 1.1 × idle)."""
    out = []
    section = [r for r in reports if r[0].startswith(section_name)]
    intervals = {}
    for f in figures:
        m = re.match(figure + r" (?P<what>\w+): ratio=(?P<r>[\d.]+) interval=(?P<lo>[\d.]+)-(?P<hi>[\d.]+)", f)
        if m:
            intervals[m["what"]] = f"; ratio {m['r']}, 90 % interval {m['lo']}–{m['hi']}"
    for what, key, name in (("press → began line", "press", "press → the daemon's began line"),
                            ("knob step → SET_CUR at the camera", "knob", "knob step → SET_CUR at the fake UVC camera")):
        idle = [p99 for _, w, _, p99 in section if w == "idle " + what]
        loaded = [(p50, p99) for _, w, p50, p99 in section if w == busy + " " + what]
        if idle and loaded:
            p50, p99 = loaded[-1]
            out.append((f"{section_name[:-1]}: {name} p99 {label}, against idle (VM, alternating blocks)",
                        f"p99 {p99:.0f} µs (p50 {p50:.0f}); idle p99 {idle[-1]:.0f} µs{intervals.get(key, '')}", "≤ 1.1 × idle",
                        "met" if p99 <= 1.1 * idle[-1] else "missed"))
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    reports, figures = parse(args)
    table = rows(reports, figures)
    if not table:
        print("table: no figures in " + ", ".join(args), file=sys.stderr)
        return 2
    markdown = "--markdown" in sys.argv
    for name, value, threshold, verdict in table:
        print(f"| {name} | {value} | {threshold} | {verdict} |" if markdown else f"{verdict:>8}  {name}: {value} [{threshold}]")
    return 1 if any(v.startswith("missed") for _, _, _, v in table) else 0


if __name__ == "__main__":
    sys.exit(main())
