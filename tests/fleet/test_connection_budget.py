"""Each daemon's connections to PostgreSQL (cli/budget.py): a worker and a scheduler at
rest hold two each (one pooled, one listening), ``--max-db-connections`` bounds a
daemon under load too, and a bound that leaves nothing for queries is refused."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from tests.fleet.daemons import ROOT, Daemons
from tests.polling import wait_for

from taskyard.api.yard import Yard
from taskyard.store.postgresql.urls import pg_target


@pytest.fixture
def pg(pg_url: str) -> str:
    return pg_url


def _held(url: str) -> Counter[str]:
    """Connections to this database now, by PGAPPNAME (each daemon's name)."""
    with psycopg.connect(pg_target(url).libpq(), autocommit=True) as conn:
        rows = conn.execute("SELECT application_name FROM pg_stat_activity WHERE datname = "
                            "current_database() AND pid <> pg_backend_pid()").fetchall()
    return Counter(name for (name,) in rows)


def test_daemons_at_rest_hold_two_connections_and_a_bound_holds_under_load(
        pg: str, tmp_path: Path) -> None:
    daemons = Daemons(tmp_path)
    yard = Yard(pg)
    try:
        yard.add_task_type("echo", "python:handlers_for_tests:echo")
        daemons.start("scheduler", "--db", pg, "scheduler")
        daemons.start("worker", "--db", pg, "worker", "--capacity", "2")
        daemons.start("bounded", "--db", pg, "worker", "--capacity", "2",
                      "--max-db-connections", "2")
        wait_for("the workers", lambda: len(yard.workers()) == 2, timeout=120)
        seen: Counter[str] = Counter()
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                for name, n in _held(pg).items():
                    seen[name] = max(seen[name], n)
                time.sleep(0.01)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            ids = yard.submit_many("echo", [{"n": n} for n in range(300)])
            for job_id in ids:
                assert yard.wait(job_id, 120).state == "succeeded"
        finally:
            done.set()
            sampler.join()
        assert seen["bounded"] <= 2, seen
        assert {yard.get_job(j).worker for j in ids} >= {w.name for w in yard.workers()}
        # At rest: what a burst opened beyond the pooled one is closed again.
        wait_for("the daemons to rest", lambda: all(
            _held(pg)[name] <= 2 for name in ("scheduler", "worker", "bounded")), timeout=60)
        assert seen["worker"] >= 2 and seen["scheduler"] >= 2  # the counts are real
    finally:
        yard.close()
        codes = daemons.stop()
    assert set(codes.values()) == {0}, daemons.logs()


def test_a_bound_that_leaves_nothing_for_queries_is_refused(pg: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "taskyard", "--db", pg, "worker", "--max-db-connections", "1"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert done.returncode == 2, done
    assert "--max-db-connections" in done.stderr and "--shared-listener" in done.stderr
