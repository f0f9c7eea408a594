"""bench.release: releasing a fan-out's children, timed, and with ``--memory`` measured
in a process that never held the graph (as the worker that completes the root)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from bench import release


def _row(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_the_memory_mode_completes_the_root_in_a_process_of_its_own(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'release.db'}"
    assert release.main(["--db", url, "--jobs", "300", "--memory"]) == 0
    row = _row(capsys)
    assert row["jobs"] == 300 and isinstance(row["statements"], int) and row["statements"] > 0
    before, after, peak = row["rss_before_mb"], row["rss_after_mb"], row["rss_peak_mb"]
    assert isinstance(before, float) and isinstance(after, float) and isinstance(peak, float)
    assert 0 < before <= peak and after <= peak
    for part in ("anon", "file"):  # RSS's two parts, sampled during the completion
        b, a, p = (row[f"{part}_{when}_mb"] for when in ("before", "after", "peak"))
        assert isinstance(b, float) and isinstance(a, float) and isinstance(p, float)
        assert 0 < b <= p and a <= p
    # The root's 298 children were released: pending now; the join still waits on them.
    with closing(sqlite3.connect(tmp_path / "release.db")) as conn:
        states = dict(conn.execute("SELECT state, count(*) FROM jobs GROUP BY state"))
    assert states == {"succeeded": 1, "pending": 298, "waiting": 1}
