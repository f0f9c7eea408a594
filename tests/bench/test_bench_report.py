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


def _counted(system: str, part: str, result: dict[str, Any]) -> dict[str, Any]:
    return {"rep": 1, "system": system, "workload": "DB", "cell": part,
            "result": {"status": "ok", "part": part, **result}}


def _per_job(rt: float, st: float, tx: float) -> dict[str, float]:
    return {"jobs": 100, "round_trips": rt, "statements": st, "transactions": tx}


def test_the_database_work_per_job_has_a_table_per_workload() -> None:
    """The counted runs' figures, per job, in a W1 table and a W2 table (PostgreSQL
    systems only), each said how it is counted, and taskyard's ratio to each peer."""
    profile = {**asdict(suite.PROFILES["smoke"]), "db": (10_000, 200, 50, 15)}
    systems = ["taskyard-sqlite", "taskyard-pg", "procrastinate-pg", "huey-pg"]
    doc = {"started": "20261125T000000Z", "profile": profile, "machine": MACHINE,
           "systems": systems, "config": {"huey-pg": {"batch_api": "none"}},
           "runs": [
               _counted("taskyard-pg", "W1", {
                   "enqueue_call": _per_job(1, 1, 1), "enqueue_batch": _per_job(0.01, 0.01,
                                                                                  0.002),
                   "complete": _per_job(0.2, 0.25, 0.05)}),
               _counted("procrastinate-pg", "W1", {
                   "enqueue_call": _per_job(4, 3, 1), "enqueue_batch": _per_job(0.004, 0.003,
                                                                                  0.001),
                   "complete": _per_job(8, 6, 2)}),
               _counted("huey-pg", "W1", {"enqueue_call": _per_job(4, 4, 1),
                                          "complete": _per_job(3, 3, 3)}),
               _counted("taskyard-pg", "W2", {**_per_job(9.5, 13, 2),
                                              "latency_round_trips": 1.2}),
               _counted("huey-pg", "W2", {**_per_job(8, 8, 5), "latency_round_trips": 6})]}
    summary = report.summarize(doc)
    rows = {m["id"]: m["values"] for m in summary["metrics"]}
    assert rows["db_w1_complete_round_trips"]["procrastinate-pg"]["median"] == 8
    assert rows["db_w1_enqueue_batch_statements"]["huey-pg"]["status"] == "none"
    assert rows["db_w2_path"]["huey-pg"]["median"] == 6
    assert summary["ratios"]["db_w1_complete_round_trips"]["procrastinate-pg"] == 0.025
    assert summary["ratios"]["db_w2_path"]["huey-pg"] == 0.2
    text = report.markdown(summary)
    w1 = text.split("## Database work per job (machine-independent): W1")[1].split("##")[0]
    w2 = text.split("## Database work per job (machine-independent): W2")[1].split("##")[0]
    assert "`bench/wire.py`" in w1 and "pg_stat_database" in w1 and "10,000 jobs" in w1
    header = next(line for line in w1.splitlines() if line.startswith("| metric"))
    assert header == "| metric | taskyard-pg | procrastinate-pg | huey-pg |"
    assert "| completion, 2 worker processes: round trips (per job, ↓) | 0.2 | 8.00 | " \
           "3.00 |" in w1
    # A section has a column only for the systems with a figure in it.
    assert "| round trips between the enqueue call and the handler's start (per job, ↓) " \
           "| 1.20 | 6.00 |" in w2
