"""The report's rows of taskyard's own W1 cells (its workers running the scheduler
themselves, `worker --scheduler`; its workers of one slot each, `--capacity 1`):
taskyard's figure from that run, each peer's from its own ordinary K=2 run, and the
ratio between the two."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from bench import report, suite

MACHINE = {"cpu": "test", "cores": 2, "memory_gib": 1.0, "kernel": "test", "python": "3.11",
           "load_start": [0.0, 0.0, 0.0], "load_end": [0.0, 0.0, 0.0], "versions": {}}


def _run(system: str, cell: str, rss: dict[str, float], rate: float) -> dict[str, Any]:
    return {"rep": 1, "system": system, "workload": "W1", "cell": cell,
            "result": {"status": "ok", "complete_per_s": rate, "rss_mb": rss}}


# (profile flag, cell, metric suffix, taskyard's RSS in that cell: 162 MiB in all, its
# marker in the text)
TASKYARD_ONLY_CELLS = [
    ("w1_inproc", suite.INPROC, "inproc", {"workers": 162.0}, "`worker --scheduler`"),
    ("w1_one_slot", suite.ONE_SLOT, "one_slot", {"scheduler": 55.0, "workers": 107.0},
     "`--capacity 1`"),
]


@pytest.mark.parametrize(("flag", "cell", "suffix", "rss", "marker"), TASKYARD_ONLY_CELLS)
def test_a_taskyard_only_cell_sits_beside_the_peers_own_k2_run(
        flag: str, cell: str, suffix: str, rss: dict[str, float], marker: str) -> None:
    """The rows of taskyard's workers running the scheduler themselves, and of its
    workers of one slot each: each peer's figure is from its ordinary K=2 run."""
    profile = {**asdict(suite.PROFILES["smoke"]), flag: True}
    doc = {"started": "20261125T000000Z", "profile": profile, "machine": MACHINE,
           "systems": ["taskyard-pg", "huey-pg"], "config": {},
           "runs": [
               _run("taskyard-pg", "K=2", {"scheduler": 55.0, "workers": 160.0}, 8000.0),
               _run("taskyard-pg", cell, rss, 8200.0),
               _run("huey-pg", "K=2", {"workers": 200.0}, 5000.0)]}
    summary = report.summarize(doc)
    rows = {m["id"]: m["values"] for m in summary["metrics"]}
    assert rows["w5_w1"]["taskyard-pg"]["median"] == 215.0
    assert rows[f"w5_w1_{suffix}"]["taskyard-pg"]["median"] == 162.0
    assert rows[f"w5_w1_{suffix}"]["huey-pg"]["median"] == 200.0  # its own K=2 run
    assert rows[f"w1_complete_2_{suffix}"]["taskyard-pg"]["median"] == 8200.0
    assert summary["ratios"][f"w5_w1_{suffix}"]["huey-pg"] == 0.81
    assert marker in report.markdown(summary)


def test_the_heading_says_how_many_runs_the_budget_skipped() -> None:
    """A run cut short by the suite's budget is not "every cell in every repetition"."""
    profile = asdict(suite.PROFILES["smoke"])
    ran = _run("taskyard-pg", "K=2", {"scheduler": 55.0, "workers": 160.0}, 8000.0)
    skipped = {**ran, "rep": 2, "result": {"status": "skipped"}}
    doc = {"started": "20261125T000000Z", "profile": profile, "machine": MACHINE,
           "systems": ["taskyard-pg"], "config": {}, "runs": [ran]}
    heading = report.markdown(report.summarize(doc)).splitlines()[2]
    assert "skipped" not in heading
    cut = report.markdown(report.summarize({**doc, "runs": [ran, skipped]})).splitlines()[2]
    assert "1 run skipped when the time budget ran out, their cells marked [n/m]" in cut
