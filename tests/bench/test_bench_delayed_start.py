"""``python -m bench.delayed_start`` at a tiny size on SQLite: the daemons come up, jobs
for later run, and none starts before its ``run_after``. How late they start is the
benchmark's figure, not asserted here (the behaviour is: tests/integration/
test_delayed_start.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.delayed_start import main


def test_jobs_for_later_are_measured_and_none_starts_early(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", f"sqlite:///{tmp_path / 'ds.db'}", "--interval", "30",
                 "--delays", "0.2,0.5", "--rounds", "2"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["delay_s"], r["jobs"]) for r in rows] == [(0.2, 2), (0.5, 2)]
    assert all(0 <= r["late_ms_min"] <= r["late_ms_max"] for r in rows)
