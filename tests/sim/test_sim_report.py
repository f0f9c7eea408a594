"""The report: its figures, its tables, its plots."""

from __future__ import annotations

from pathlib import Path

import pytest
from sim_runs import run

from taskyard.sim.plots import write_plots
from taskyard.sim.report import human, percentile, tables


@pytest.mark.parametrize(("seconds", "text"), [
    (None, "-"), (0.25, "250ms"), (42, "42.0s"), (185, "3m05s"), (7380, "2h03m"),
    (93600, "1d02h"),
])
def test_durations_read_as_people_write_them(seconds, text):
    assert human(seconds) == text


def test_percentiles_are_nearest_rank():
    values = list(range(1, 101))
    assert [percentile(values, p) for p in (50, 95, 99, 100)] == [50, 95, 99, 100]
    assert percentile([], 50) == 0.0


def test_utilization_waits_and_unfinished_work_are_reported(tmp_path: Path):
    (tmp_path / "g.yaml").write_text("tasks:\n  a: {type: t}\n  b: {type: t, requires: [a]}\n")
    result = run({"workers": {"w": {"count": 2, "capacity": 1}},
                  "task_types": {"t": {"duration": "10s"},
                                 "lonely": {"duration": "1s", "pools": ["nowhere"]}},
                  "arrivals": [{"type": "t", "at": 0, "burst": 4},
                               {"type": "lonely", "at": 0, "priority": -1},
                               {"graph": "g.yaml", "at": "40s"}]}, base=tmp_path)
    report = result.report
    assert report["pools"] == [{"pool": "default", "workers": 2, "capacity": 2,
                                "utilization": 0.5}]  # 60 of 120 capacity-seconds
    (waits,) = report["waits"]
    assert (waits["jobs"], waits["p50"], waits["max"]) == (6, 0.0, 10.0)
    assert report["graphs"]["states"] == {"finished": 1}
    assert report["graphs"]["makespan_max"] == 20.0
    assert report["jobs"]["unfinished"] == {"pending": 1}
    assert report["starvation"] == {"priority": -1, "longest_wait": None,
                                    "still_waiting": 1, "longest_still_waiting": 60.0}
    titles = [t.title for t in tables(report)]
    assert titles == ["summary", "pools", "waits"]
    summary = dict(tables(report)[0].rows)
    assert summary["unfinished"] == "1 pending"
    assert "1 never started" in summary["starvation"]
    assert summary["graphs"].startswith("1 submitted, 1 finished")
    paths = write_plots(report, tmp_path / "plots")
    assert [p.name for p in paths] == ["queue.png", "waits.png", "utilization.png"]
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in paths)
