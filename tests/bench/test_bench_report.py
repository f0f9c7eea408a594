"""The report's rows of taskyard's own W1 cell (deployed as huey's `-w 2`: its workers
of one slot each, `--capacity 1`, the first running the scheduler, `worker --scheduler`):
taskyard's figure from that run, each peer's from its own ordinary K=2 run, and the
ratio between the two."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from bench import report, suite

MACHINE = {"cpu": "test", "cores": 2, "memory_gib": 1.0, "kernel": "test", "python": "3.11",
           "load_start": [0.0, 0.0, 0.0], "load_end": [0.0, 0.0, 0.0], "versions": {}}


def _run(system: str, cell: str, rss: dict[str, float], rate: float) -> dict[str, Any]:
    return {"rep": 1, "system": system, "workload": "W1", "cell": cell,
            "result": {"status": "ok", "complete_per_s": rate, "rss_mb": rss}}


def test_the_lean_cell_sits_beside_the_peers_own_k2_run() -> None:
    """taskyard deployed as huey's `-w 2`: each peer's figure is from its ordinary K=2
    run, and the text says how taskyard was deployed."""
    profile = {**asdict(suite.PROFILES["smoke"]), "w1_lean": True}
    doc = {"started": "20261125T000000Z", "profile": profile, "machine": MACHINE,
           "systems": ["taskyard-pg", "huey-pg"], "config": {},
           "runs": [
               _run("taskyard-pg", "K=2", {"scheduler": 55.0, "workers": 160.0}, 8000.0),
               _run("taskyard-pg", suite.LEAN, {"workers": 162.0}, 8200.0),
               _run("huey-pg", "K=2", {"workers": 200.0}, 5000.0)]}
    summary = report.summarize(doc)
    rows = {m["id"]: m["values"] for m in summary["metrics"]}
    assert rows["w5_w1"]["taskyard-pg"]["median"] == 215.0
    assert rows["w5_w1_lean"]["taskyard-pg"]["median"] == 162.0
    assert rows["w5_w1_lean"]["huey-pg"]["median"] == 200.0  # its own K=2 run
    assert rows["w1_complete_2_lean"]["taskyard-pg"]["median"] == 8200.0
    assert summary["ratios"]["w5_w1_lean"]["huey-pg"] == 0.81
    text = report.markdown(summary)
    assert "`--capacity 1`" in text and "`taskyard worker --scheduler`" in text


def test_without_the_lean_cell_the_report_has_no_row_for_it() -> None:
    profile = {**asdict(suite.PROFILES["smoke"]), "w1_lean": False}
    doc = {"started": "20261125T000000Z", "profile": profile, "machine": MACHINE,
           "systems": ["taskyard-pg"], "config": {},
           "runs": [_run("taskyard-pg", "K=2", {"scheduler": 55.0, "workers": 160.0}, 8000.0)]}
    summary = report.summarize(doc)
    assert not {"w5_w1_lean", "w1_complete_2_lean"} & {m["id"] for m in summary["metrics"]}


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
