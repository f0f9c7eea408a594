"""``python -m bench.amqp`` and ``python -m bench.celery_bridge`` at tiny sizes (SQLite):
the bridges' benchmarks cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, module: str, *args: str) -> dict[str, float]:
    out = tmp_path / f"{module}.json"
    proc = subprocess.run([sys.executable, "-m", module, *args, "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    figures: dict[str, float] = json.loads(out.read_text())
    return figures


def test_bench_amqp_smoke(tmp_path: Path) -> None:
    figures = _run(tmp_path, "bench.amqp", "--events", "300", "--batch", "50")
    assert figures["events"] == 300 and figures["events_per_second"] > 0


def test_bench_celery_bridge_smoke(tmp_path: Path) -> None:
    figures = _run(tmp_path, "bench.celery_bridge", "--jobs", "5")
    assert 0 < figures["p50_ms"] <= figures["p99_ms"]
