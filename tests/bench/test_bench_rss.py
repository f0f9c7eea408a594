"""bench/rss.py counts a process at the peak of the program it runs: a process sampled
between fork and exec (its parent's image) must not count at its parent's size."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.rss import TreeSampler

_CHILD = """
import os, sys
big = bytearray(96 * 1024 * 1024)  # touched: resident
for i in range(0, len(big), 4096):
    big[i] = 1
print("ready", flush=True)
sys.stdin.readline()
os.execv("/bin/sleep", ["sleep", "60"])
"""


def test_a_process_counts_at_the_peak_of_the_program_it_runs_now() -> None:
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        sampler = TreeSampler()
        sampler.add("tree", child.pid)
        sampler.sample()
        assert sampler.peak_mb()["tree"] > 90
        child.stdin.write("go\n")
        child.stdin.flush()
        deadline = time.monotonic() + 60
        while os.readlink(f"/proc/{child.pid}/exe") != os.path.realpath("/bin/sleep"):
            assert time.monotonic() < deadline, "the child never ran sleep"
            time.sleep(0.01)
        sampler.sample()
        assert sampler.peak_mb()["tree"] < 20
    finally:
        child.kill()
        child.wait()
