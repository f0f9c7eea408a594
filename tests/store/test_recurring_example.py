"""examples/recurring runs as documented: apply the YAML, then the adaptive loop."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.store.driver import claim, complete

from taskyard.api.yard import Yard
from taskyard.model.records import Outcome
from taskyard.scheduler.cycle import schedule

EXAMPLE = Path(__file__).parents[2] / "examples" / "recurring"


@pytest.fixture
def yard(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    shutil.copy(EXAMPLE / "news.txt", tmp_path / "news.txt")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    with Yard(db_url, inline_cycle=False) as y:
        y.apply(yaml.safe_load((EXAMPLE / "taskyard.yaml").read_text()))
        yield y
    sys.modules.pop("feeds", None)


def visit(yard: Yard) -> dict[str, Any]:
    """One cycle, and every placed job run in-process by the example's handlers."""
    import feeds

    store = yard.store
    worker = next((w for w in store.workers.list() if w.name == "w"), None) or \
        store.workers.register("w", ["default"], 10, lease_seconds=300)
    schedule(store)
    results: dict[str, Any] = {}
    for job in claim(store, worker.id, 10):
        result = feeds.check(**job.args) if job.type == "check-feed" else "ok"
        results[job.type] = result
        complete(store, worker.id, [Outcome(job.job_id, job.attempt, "succeeded", 0,
                                                    result)])
    return results


def test_example_schedules_apply_and_adapt(yard: Yard) -> None:
    kinds = {s.name: (s.kind, s.interval) for s in yard.list_schedules()}
    assert kinds == {"news-feed": ("adaptive", 60.0), "report": ("cron", None),
                     "heartbeat": ("every", 300.0)}
    assert yard.get_schedule("report").timezone == "Europe/Paris"
    intervals = []
    for step in range(5):
        if step == 3:
            with open("news.txt", "a") as f:
                f.write("breaking news\n")
        got = visit(yard)
        assert "check-feed" in got
        intervals.append(yard.get_schedule("news-feed").current_interval)
        # Jump the clock to the next run (the database clock cannot be moved).
        yard.store.schedule_runs.create_due_jobs(now=yard.get_schedule("news-feed").next_run)
    # First visit is eventful (never seen): 60/2 = 30 (the min); then nothing new
    # doubles it; the appended line brings it back down.
    assert intervals == [30.0, 60.0, 120.0, 60.0, 120.0]
