"""A tracing instance of the bench's own (the kernel's tracefs, trace clock mono: the same
CLOCK_MONOTONIC as the moments the scripts read), with one event enabled; libcamera.py and
webrtc.py read its v4l2:v4l2_dqbuf events, booth.py its sched:sched_switch events."""
import os
import subprocess


class TraceInstance:
    def __init__(self, name, event, buffer_kb):
        tracing = "/sys/kernel/tracing"
        if not os.path.isdir(f"{tracing}/instances"):
            subprocess.run(["mount", "-t", "tracefs", "nodev", tracing], check=True)
        self.dir = f"{tracing}/instances/{name}-{os.getpid()}"
        if os.path.isdir(self.dir):
            os.rmdir(self.dir)
        os.mkdir(self.dir)
        self.event = event
        self._write("trace_clock", "mono")
        self._write("buffer_size_kb", str(buffer_kb))
        self._write(f"events/{event}/enable", "1")

    def _write(self, name, text):
        with open(f"{self.dir}/{name}", "w") as f:
            f.write(text)

    def clear(self):
        self._write("trace", "")

    def lines(self):
        """The trace's lines since the last clear()."""
        with open(f"{self.dir}/trace") as f:
            yield from f

    def close(self):
        self._write(f"events/{self.event}/enable", "0")
        os.rmdir(self.dir)
