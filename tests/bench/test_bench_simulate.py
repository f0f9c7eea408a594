"""The simulator's benchmark script at a thousandth of its size: it cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_simulator_benchmark_runs_scaled_down():
    done = subprocess.run([sys.executable, "-m", "bench.simulate", "--scale", "1000",
                           "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["workers"] == 500 and found["jobs"] == 1000
    assert sum(found["ended"].values()) == 1000 and not found["unfinished"]
    assert found["wall_seconds"] > 0 and found["jobs_per_second"] > 0
