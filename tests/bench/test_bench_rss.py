"""bench/rss.py counts a process at the peak of the program it runs: a process sampled
between fork and exec (its parent's image) must not count at its parent's size."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

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


def test_each_process_is_counted_with_what_it_runs() -> None:
    code = "import sys, time; print('ready', flush=True); time.sleep(60)"
    named = subprocess.Popen([sys.executable, "-c", code, "worker", "--name", "w-1"],
                             stdout=subprocess.PIPE, text=True)
    bare = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        for child in (named, bare):
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        sampler = TreeSampler()
        sampler.add("workers", named.pid)
        sampler.add("scheduler", bare.pid)
        sampler.sample()
        parts = {p["pid"]: p for p in sampler.breakdown()}
        # Options, their values' code and URLs are left out; a command of none is its
        # program's name.
        assert parts[named.pid]["runs"] == "worker w-1"
        assert parts[named.pid]["group"] == "workers"
        comm = Path(f"/proc/{bare.pid}/comm").read_text().strip()
        assert parts[bare.pid]["runs"] == comm
        peaks = sampler.peak_mb()
        for group in ("workers", "scheduler"):
            total = sum(float(p["peak_mb"]) for p in parts.values() if p["group"] == group)
            assert abs(total - peaks[group]) < 0.2
    finally:
        for child in (named, bare):
            child.kill()
            child.wait()
