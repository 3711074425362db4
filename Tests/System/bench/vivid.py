"""vivid, the capture camera of the shutter bench (shutter.py): its node, its real frame
interval by the driver's own timestamps, and its rate (vivid keeps it across opens)."""
import os
import re
import statistics
import subprocess


def vivid_node():
    base = "/sys/class/video4linux"
    for entry in sorted(os.listdir(base)):
        try:
            if open(f"{base}/{entry}/name").read().strip() == "vivid-000-vid-cap":
                return f"/dev/{entry}"
        except OSError:
            pass
    return None


def measure_interval(node, width, height, frames=60):
    """Mean and max frame interval (s) of vivid by the driver's own timestamps."""
    r = subprocess.run(["v4l2-ctl", "-d", node, f"--set-fmt-video=width={width},height={height},pixelformat=YUYV",
                        "--stream-mmap", f"--stream-count={frames}", "--verbose"],
                       capture_output=True, text=True, timeout=60)
    ts = [float(x) for x in re.findall(r"ts: (\d+\.\d+)", r.stdout + r.stderr)]
    deltas = [b - a for a, b in zip(ts, ts[1:])][5:]  # the first frames of a stream come irregularly
    if not deltas:
        return None
    return statistics.mean(deltas), max(deltas), statistics.median(deltas)


def measure_interval_at(node, fps):
    set_rate(node, fps)
    iv = measure_interval(node, 640, 480)
    set_rate(node, 5)
    return iv


def parse_fps(node):
    r = subprocess.run(["v4l2-ctl", "-d", node, "--get-parm"], capture_output=True, text=True)
    m = re.search(r"Frames per second: ([\d.]+)", r.stdout)
    return m.group(1) if m else "?"


def set_rate(node, fps):
    """vivid keeps its frame interval across opens; neither evcapture nor fswebcam sets one."""
    subprocess.run(["v4l2-ctl", "-d", node, "--set-fmt-video=width=640,height=480,pixelformat=YUYV",
                    f"--set-parm={fps}"], capture_output=True)
