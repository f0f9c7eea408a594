"""``python -m bench.http`` at tiny sizes on each store: the HTTP benchmark cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_http_smoke(db_url: str, tmp_path: Path) -> None:
    out = tmp_path / "http.json"
    store = ["--stores", "sqlite"] if db_url.startswith("sqlite") else [
        "--stores", "pg", "--pg", db_url]
    proc = subprocess.run([sys.executable, "-m", "bench.http", "--jobs", "40", "--clients",
                           "2", "--batch-jobs", "2000", "--latency", "5", *store, "--json",
                           str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    (name,) = json.loads(out.read_text())
    figures = json.loads(out.read_text())[name]
    submit = figures["submit"]
    assert submit["jobs"] == 40 and submit["jobs_per_second"] > 0 and submit["errors"] == 0
    assert 0 < submit["p50_ms"] <= submit["p99_ms"] and submit["server_cpu_ms"] > 0
    assert figures["batch"]["jobs"] == 2000 and figures["batch"]["jobs_per_second"] > 0
    assert 0 < figures["latency"]["p50_ms"] <= figures["latency"]["p99_ms"]
    assert "submit" in proc.stdout and "p99" in proc.stdout
