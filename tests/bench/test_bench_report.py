"""The report's rows of taskyard's workers running the scheduler themselves
(`worker --scheduler`): taskyard's figure from that run, each peer's from its own
ordinary K=2 run, and the ratio between the two."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from bench import report, suite

MACHINE = {"cpu": "test", "cores": 2, "memory_gib": 1.0, "kernel": "test", "python": "3.11",
           "load_start": [0.0, 0.0, 0.0], "load_end": [0.0, 0.0, 0.0], "versions": {}}


def _run(system: str, cell: str, rss: dict[str, float], rate: float) -> dict[str, Any]:
    return {"rep": 1, "system": system, "workload": "W1", "cell": cell,
            "result": {"status": "ok", "complete_per_s": rate, "rss_mb": rss}}


def test_the_in_worker_rows_set_taskyard_beside_the_peers_own_deployment() -> None:
    profile = {**asdict(suite.PROFILES["smoke"]), "w1_inproc": True}
    doc = {"started": "20261125T000000Z", "profile": profile, "machine": MACHINE,
           "systems": ["taskyard-pg", "huey-pg"], "config": {},
           "runs": [
               _run("taskyard-pg", "K=2", {"scheduler": 55.0, "workers": 160.0}, 8000.0),
               _run("taskyard-pg", suite.INPROC, {"workers": 162.0}, 8200.0),
               _run("huey-pg", "K=2", {"workers": 200.0}, 5000.0)]}
    summary = report.summarize(doc)
    rows = {m["id"]: m["values"] for m in summary["metrics"]}
    assert rows["w5_w1"]["taskyard-pg"]["median"] == 215.0
    assert rows["w5_w1_inproc"]["taskyard-pg"]["median"] == 162.0
    assert rows["w5_w1_inproc"]["huey-pg"]["median"] == 200.0  # its own K=2 run
    assert rows["w1_complete_2_inproc"]["taskyard-pg"]["median"] == 8200.0
    assert summary["ratios"]["w5_w1_inproc"]["huey-pg"] == 0.81
    assert "`worker --scheduler`" in report.markdown(summary)
